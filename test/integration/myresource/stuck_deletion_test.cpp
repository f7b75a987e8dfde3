// A foreground deletion the garbage collector never finishes (docs/design.md "Finalizer"), with the
// real operator binary on the real control plane: kube-controller-manager, where the garbage
// collector runs, is stopped, so the operator's foreground DELETEs leave its Deployments "being
// deleted" for good, as Kubernetes issue 115570 did in the soak. The operator deletes them again in
// background once their pods' grace period (30 s, unset) plus --stuck-deletion-timeout has passed:
// the canary's removal and the MyResource's deletion complete.
#include <catch2/catch.hpp>

#include <sstream>

#include "base/time_format.h"
#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

TEST_CASE(
    "with the garbage collector down, a child stuck in foreground deletion is deleted again in "
    "background after its grace period and --stuck-deletion-timeout: canary removal and MyResource "
    "deletion complete",
    "[myresource][operator][faults]") {
  if (!testenv::owns_control_plane())
    FAIL("needs the ctest fixture's control plane (it stops the garbage collector)");
  testenv::ScopedNamespace ns("mr-stuck-deletion");
  OperatorProcess operator_process({.user = "myop-stuck-deletion",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {"--stuck-deletion-timeout", "1s"}});
  operator_process.start();
  testenv::kubectl_apply(
      myresource_manifest(ns.name(), "canaried", "nginx:1.27.1", 1, "", canary_annotations("1.28.0")));
  testenv::kubectl_apply(myresource_manifest(ns.name(), "deleted", "nginx:1.27.1", 1));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "deleted"); }, 120s));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "canaried-canary", "nginx:1.28.0"); }, 120s));

  testenv::ComponentStopped no_garbage_collector("kube-controller-manager");
  const std::size_t mark = audit_mark();
  testenv::kubectl_or_fail("annotate myresources.v1alpha1.myorg.io canaried -n " + ns.name() +
                           " myorg.io/canary- myorg.io/targetVersion-");
  testenv::kubectl_or_fail("delete mr deleted -n " + ns.name() + " --wait=false");

  // Asked once, in the foreground: both wait, being deleted, for a garbage collector that is not there.
  const auto stuck = [&](const std::string& name) {
    return jsonpath("deployment", ns.name(), name, "{.metadata.deletionTimestamp} {.metadata.finalizers}")
               .find(" [\"foregroundDeletion\"]") != std::string::npos;
  };
  const bool both_stuck = eventually([&] { return stuck("canaried-canary") && stuck("deleted"); }, 30s);
  INFO("canaried-canary: " << jsonpath("deployment", ns.name(), "canaried-canary",
                                       "{.metadata.deletionTimestamp} {.metadata.finalizers}"));
  INFO("deleted: " << jsonpath("deployment", ns.name(), "deleted",
                               "{.metadata.deletionTimestamp} {.metadata.finalizers}"));
  REQUIRE(both_stuck);
  const std::string canary_deleted_at =
      jsonpath("deployment", ns.name(), "canaried-canary", "{.metadata.deletionTimestamp}");
  const std::string stable_deleted_at =
      jsonpath("deployment", ns.name(), "deleted", "{.metadata.deletionTimestamp}");
  CHECK(myresource_ready(ns.name(), "canaried"));
  CHECK_FALSE(myresource_gone(ns.name(), "deleted"));  // its finalizer waits for the child

  // Deleted again in background once stuck: gone without the garbage collector, the finalizer released.
  INFO("operator log:\n" << operator_process.log_tail(30));
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "canaried-canary"); }, 90s));
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "deleted"); }, 30s));
  REQUIRE(eventually([&] { return myresource_gone(ns.name(), "deleted"); }, 30s));
  CHECK(eventually(
      [&] { return has_event(ns.name(), "MyResource", "canaried", "Warning", "ForegroundDeletionStuck"); },
      30s));
  CHECK(deployment_rolled(ns.name(), "canaried", "nginx:1.27.1"));  // the stable one untouched
  // And a warning in the operator's log for each.
  const std::string log = operator_process.log_tail(400);
  const auto warned_about = [&](const std::string& deployment) {
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
      if (line.find("Deployment stuck in foreground deletion") != std::string::npos &&
          line.find("deployment=" + deployment + " ") != std::string::npos)
        return true;
    return false;
  };
  CHECK(warned_about("canaried-canary"));
  CHECK(warned_about("deleted"));

  // Two DELETEs each: the foreground one, and the background one no sooner than the pods' grace
  // period (30 s) plus the 1 s timeout after the deletionTimestamp (a lower bound: load only delays).
  const auto writes = audit_writes(operator_process.user(), mark);
  INFO("operator writes:\n" << describe(writes));
  for (const auto& [name, deleted_at] : {std::pair{std::string("canaried-canary"), canary_deleted_at},
                                         std::pair{std::string("deleted"), stable_deleted_at}}) {
    const auto deletes = deployment_writes(operator_process.user(), mark, name);
    REQUIRE(deletes.size() == 2);
    CHECK(deletes[0].verb == "delete");
    CHECK(deletes[1].verb == "delete");
    const auto since = base::parse_rfc3339(deleted_at);
    const auto again = base::parse_rfc3339(deletes[1].received);
    REQUIRE(since);
    REQUIRE(again);
    CHECK(*again - *since >= 31s);
  }
  CHECK(operator_process.running());
}
