// The orphan sweep (docs/design.md "Orphan sweep") with the real operator binary on the real control
// plane: a Deployment managed by my-operator whose controller owner MyResource is gone is reported
// (orphanPolicy report) or deleted (orphanPolicy delete), as the feature ConfigMap says at the time.
#include <catch2/catch.hpp>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

TEST_CASE(
    "an orphaned Deployment is left alone without orphanSweep, reported under orphanPolicy report and "
    "deleted under delete, switched while the operator runs",
    "[myresource][operator][orphans]") {
  if (!testenv::owns_control_plane())
    FAIL("needs the ctest fixture's control plane (it stops the garbage collector)");
  testenv::ScopedNamespace ns("mr-orphans");
  set_feature_flags(ns.name(), {{"orphanSweep", "false"}, {"orphanPolicy", "report"}});
  OperatorProcess operator_process({.user = "myop-orphans",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {"--orphan-sweep-period", "2s"}});
  operator_process.start();

  testenv::kubectl_apply(myresource_manifest(ns.name(), "gone", "nginx:1.27.1", 1));
  testenv::kubectl_apply(myresource_manifest(ns.name(), "kept", "nginx:1.27.1", 1));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "gone"); }, 120s));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "kept"); }, 60s));
  const std::string owner_uid = jsonpath("myresource", ns.name(), "gone", "{.metadata.uid}");
  const std::string orphan_uid = jsonpath("deployment", ns.name(), "gone", "{.metadata.uid}");
  REQUIRE(jsonpath("deployment", ns.name(), "gone", "{.metadata.ownerReferences[0].uid}") == owner_uid);

  // The owner goes while neither the operator (whose finalizer would delete the Deployment) nor
  // the garbage collector runs: the Deployment stays with an owner reference to nothing.
  operator_process.stop();
  // The garbage collector (in kube-controller-manager) deletes a Deployment whose owner is gone
  // within seconds, before any sweep of the operator could see it. The sweep is the operator's
  // answer to a cluster whose garbage collector is down or behind; this makes that cluster.
  testenv::ComponentStopped no_garbage_collector("kube-controller-manager");
  testenv::kubectl_or_fail("patch myresource gone -n " + ns.name() +
                           " --type json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'");
  testenv::kubectl_or_fail("delete myresource gone -n " + ns.name() + " --wait=true --timeout=60s");
  REQUIRE(myresource_gone(ns.name(), "gone"));
  REQUIRE(jsonpath("deployment", ns.name(), "gone", "{.metadata.ownerReferences[0].uid}") == owner_uid);

  operator_process.start();
  const std::string reported = "myoperator_orphans_total{action=\"reported\"}";
  const std::string deleted = "myoperator_orphans_total{action=\"deleted\"}";
  // Waits for `passes` more sweeps to finish (the period is 2 s), not for a guessed time.
  const auto sweeps_pass = [&](int passes) {
    const std::string sweeps = "myoperator_orphan_sweeps_total";
    double now = -1;  // absent until the sweeper has registered it
    if (!eventually([&] { return (now = operator_process.metric(sweeps)) >= 0; }, 30s)) return false;
    const double until = now + passes;
    return eventually([&] { return operator_process.metric(sweeps) >= until; }, 30s);
  };

  // orphanSweep=false: several periods pass and nothing happens (both series exist from the start,
  // at 0, so a dashboard panel has data on a healthy cluster).
  REQUIRE(sweeps_pass(3));
  CHECK(operator_process.metric(reported) == 0);
  CHECK(operator_process.metric(deleted) == 0);
  CHECK(jsonpath("deployment", ns.name(), "gone", "{.metadata.uid}") == orphan_uid);

  // orphanPolicy report: an event and the counter, once; the Deployment stays.
  set_feature_flags(ns.name(), {{"orphanSweep", "true"}, {"orphanPolicy", "report"}});
  REQUIRE(eventually([&] { return operator_process.metric(reported) == 1; }, 30s));
  CHECK(
      eventually([&] { return has_event(ns.name(), "Deployment", "gone", "Warning", "OrphanFound"); }, 30s));
  REQUIRE(sweeps_pass(3));  // reported once, kept
  CHECK(operator_process.metric(reported) == 1);
  CHECK(operator_process.metric(deleted) == 0);
  CHECK(jsonpath("deployment", ns.name(), "gone", "{.metadata.uid}") == orphan_uid);
  const auto kept_events = events_about(ns.name(), "Deployment", "kept");
  INFO("events about Deployment kept:\n" << describe(kept_events));
  CHECK_FALSE(has_event(ns.name(), "Deployment", "kept", "Warning", "OrphanFound"));

  // orphanPolicy delete: the operator deletes it (the audit log names the operator's user).
  const std::size_t mark = audit_mark();
  set_feature_flags(ns.name(), {{"orphanSweep", "true"}, {"orphanPolicy", "delete"}});
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "gone"); }, 30s));
  CHECK(eventually([&] { return operator_process.metric(deleted) == 1; }, 10s));
  CHECK(eventually([&] { return has_event(ns.name(), "Deployment", "gone", "Warning", "OrphanDeleted"); },
                   30s));
  const auto writes = audit_writes(operator_process.user(), mark);
  INFO("operator writes after the switch to delete:\n" << describe(writes));
  int orphan_deletes = 0;
  for (const auto& write : writes) {
    CHECK(write.name != "kept");
    if (write.verb == "delete" && write.resource == "deployments" && write.name == "gone" &&
        write.code == 200)
      ++orphan_deletes;
  }
  CHECK(orphan_deletes == 1);

  // The Deployment whose owner exists is neither reported nor deleted.
  REQUIRE(sweeps_pass(2));
  CHECK_FALSE(deployment_gone(ns.name(), "kept"));
  CHECK(jsonpath("deployment", ns.name(), "kept", "{.metadata.ownerReferences[0].name}") == "kept");
  CHECK(operator_process.metric(reported) == 1);
  CHECK(operator_process.metric(deleted) == 1);
  CHECK(operator_process.running());
}
