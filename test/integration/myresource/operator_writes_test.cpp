// The operator writes only what differs: one Deployment update per spec change, and nothing at
// all for an unchanged spec, a resync or a restart. Counted in the API server's audit log, under
// the operator's own user, once the operator has settled (OperatorProcess::wait_until_settled) and,
// where the point is that it wrote nothing, once its metrics show the reconciles that could have
// written (resyncs, the initial list after a restart) did run.
#include <catch2/catch.hpp>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::vector<AuditEntry> only(const std::vector<AuditEntry>& entries, const std::string& resource,
                             const std::string& subresource = "") {
  std::vector<AuditEntry> kept;
  for (const auto& entry : entries)
    if (entry.resource == resource && entry.subresource == subresource) kept.push_back(entry);
  return kept;
}

}  // namespace

TEST_CASE("a spec change is one Deployment update, an unchanged spec, a resync and a restart write nothing",
          "[myresource][operator][writes]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace ns("mr-writes");
  OperatorProcess operator_process({.user = "myop-writes",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {"--resync-period", "20s"}});
  operator_process.start();

  testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1", 2));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.1"); }, 60s));
  // The trailing status writes of the first rollout land before counting.
  operator_process.wait_until_settled();

  SECTION("a spec change: exactly one Deployment write, and the status follows") {
    const std::size_t mark = audit_mark();
    testenv::kubectl_or_fail("patch myresource web -n " + ns.name() +
                             " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
    REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.2"); }, 120s));
    REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 60s));
    operator_process.wait_until_settled();
    const auto writes = audit_writes(operator_process.user(), mark);
    INFO("writes after the spec change:\n" << describe(writes));
    CHECK(only(writes, "deployments").size() == 1);
    CHECK(only(writes, "myresources").empty());  // the finalizer is already there
    CHECK_FALSE(only(writes, "myresources", "status").empty());
    for (const auto& write : writes) CHECK(write.code < 300);
    CHECK(jsonpath("myresource", ns.name(), "web", "{.status.image}") == "nginx:1.27.2");
  }

  SECTION("an unchanged spec applied again, and resyncs: no write") {
    const std::size_t mark = audit_mark();
    const double reconciles_before = operator_process.work().reconciles;
    testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1", 2));
    // A label change bumps no generation and changes nothing the operator owns.
    testenv::kubectl_or_fail("label myresource web -n " + ns.name() + " team=blue");
    // The label change is one reconcile; with nothing else changing, the two after it can only be
    // resyncs (--resync-period 20s, of the MyResources and of the Deployments).
    operator_process.wait_for_reconciles(reconciles_before + 3, 120s);
    operator_process.wait_until_settled();
    const auto writes = audit_writes(operator_process.user(), mark);
    INFO("writes:\n" << describe(writes) << "operator: " << operator_process.work().describe());
    CHECK(writes.empty());
    CHECK(operator_process.running());
  }

  SECTION("a restart: the operator lists, watches and writes nothing") {
    operator_process.stop();
    const std::size_t mark = audit_mark();
    operator_process.start();
    // The initial list of "web" reconciled, and whatever followed it done.
    operator_process.wait_for_reconciles(1);
    operator_process.wait_until_settled();
    const auto entries = audit_entries(operator_process.user(), mark);
    const auto writes = audit_writes(operator_process.user(), mark);
    INFO("requests after the restart:\n" << describe(entries));
    CHECK_FALSE(only(entries, "myresources").empty());  // it did list them: the test can fail
    CHECK(writes.empty());
  }
}
