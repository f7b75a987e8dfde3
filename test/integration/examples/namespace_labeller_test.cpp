// examples/namespace-labeller, the second controller on the runtime, run as a process against the
// real control plane: it labels a namespace when a MyResource appears in it and removes the label
// when the last one goes, and writes nothing to namespaces it has nothing to change on.
#include <catch2/catch.hpp>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::string label_of(const std::string& namespace_name) {
  auto result = testenv::kubectl("get namespace " + namespace_name +
                                 " -o 'jsonpath={.metadata.labels.myorg\\.io/has-myresources}'");
  return result.ok() ? result.output : "<error: " + result.output + ">";
}

}  // namespace

TEST_CASE("examples: namespace-labeller labels namespaces that hold MyResources, and only those",
          "[examples]") {
  testenv::ScopedNamespace holding("labeller-holding");
  testenv::ScopedNamespace empty("labeller-empty");
  const std::size_t mark = audit_mark();
  // A user of its own (with every right), so the audit log tells its requests apart. Constructing it
  // installs the CRD.
  OperatorProcess labeller(
      {.user = "namespace-labeller",
       .kubeconfig = testenv::kubeconfig_for_user("namespace-labeller", {"system:masters"}),
       .binary = "namespace-labeller"});
  // The MyResource exists before the controller starts: its initial list must find it.
  REQUIRE(testenv::kubectl_apply(myresource_manifest(holding.name(), "first", "nginx:1.27.1", 1)).ok());
  labeller.start();
  REQUIRE(eventually([&] { return label_of(holding.name()) == "true"; }, 60s));

  // A second namespace gains the label when a MyResource appears, and loses it when it goes.
  REQUIRE(testenv::kubectl_apply(myresource_manifest(empty.name(), "only", "nginx:1.27.1", 1)).ok());
  REQUIRE(eventually([&] { return label_of(empty.name()) == "true"; }, 30s));
  testenv::kubectl_or_fail("delete myresource only -n " + empty.name() + " --wait=false");
  // No my-operator runs here, so no finalizer holds it.
  REQUIRE(eventually([&] { return label_of(empty.name()).empty(); }, 30s));
  CHECK(label_of(holding.name()) == "true");
  labeller.stop();

  // Its writes: namespace patches only, one per label change of the two test namespaces (namespaces
  // of other tests that hold MyResources may be labelled too: the cluster is shared).
  int patches = 0;
  const auto writes = audit_writes("namespace-labeller", mark);
  INFO(describe(writes));
  for (const AuditEntry& entry : writes) {
    CHECK(entry.resource == "namespaces");
    CHECK(entry.verb == "patch");
    if (entry.name == holding.name() || entry.name == empty.name()) ++patches;
  }
  CHECK(patches == 3);
}
