// Feature flags (docs/design.md "Feature flags") with the real operator binary on the real control
// plane: the ConfigMap in the operator's namespace is watched and applied without a restart, and
// a MyResource's myorg.io/features annotation overrides it for that object.
#include <catch2/catch.hpp>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

bool deployment_exists(const std::string& namespace_, const std::string& name) {
  return testenv::kubectl("get deployment " + name + " -n " + namespace_).ok();
}

bool canary_is(const std::string& namespace_, const std::string& name, const std::string& reason) {
  return condition_reason(namespace_, name, "Canary") == reason;
}

// How often the operator process was started, from its log.
int starts(const OperatorProcess& process) {
  auto result = testenv::run("grep -c 'starting: server=' " + process.log_path());
  return std::atoi(result.output.c_str());
}

}  // namespace

TEST_CASE(
    "the canary flag of the feature ConfigMap, changed while the operator runs, stops and restarts a canary",
    "[myresource][operator][features]") {
  testenv::ScopedNamespace ns("mr-flags");
  OperatorProcess operator_process(
      {.user = "myop-flags", .namespaces = {ns.name()}, .pod_namespace = ns.name(), .extra_args = {}});
  operator_process.start();

  // No ConfigMap: the defaults (canary on).
  testenv::kubectl_apply(
      myresource_manifest(ns.name(), "shop", "nginx:1.27.1", 1, "", canary_annotations("1.28.0")));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "shop", "CanaryRunning"); }, 120s));
  REQUIRE(eventually([&] { return deployment_exists(ns.name(), "shop-canary"); }, 30s));

  set_feature_flags(ns.name(), {{"canary", "false"}});
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "shop-canary"); }, 60s));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "shop", "CanaryDisabled"); }, 30s));
  CHECK(condition_status(ns.name(), "shop", "Canary") == "False");
  CHECK(eventually([&] { return has_event(ns.name(), "MyResource", "shop", "Warning", "CanaryDisabled"); },
                   30s));
  CHECK(eventually([&] { return myresource_ready(ns.name(), "shop"); }, 30s));  // the stable one runs on

  set_feature_flags(ns.name(), {{"canary", "true"}});
  REQUIRE(eventually([&] { return deployment_exists(ns.name(), "shop-canary"); }, 60s));
  CHECK(jsonpath("deployment", ns.name(), "shop-canary", "{.spec.template.spec.containers[0].image}") ==
        "nginx:1.28.0");
  CHECK(eventually([&] { return canary_is(ns.name(), "shop", "CanaryRunning"); }, 30s));

  // Deleting the ConfigMap brings the defaults back (canary on): the canary stays.
  set_feature_flags(ns.name(), {{"canary", "false"}});
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "shop-canary"); }, 60s));
  testenv::kubectl_or_fail("delete configmap my-operator-config -n " + ns.name());
  CHECK(eventually([&] { return deployment_exists(ns.name(), "shop-canary"); }, 60s));
  CHECK(eventually([&] { return canary_is(ns.name(), "shop", "CanaryRunning"); }, 30s));

  CHECK(operator_process.running());
  CHECK(starts(operator_process) == 1);  // all of it without a restart
}

TEST_CASE("the myorg.io/features annotation wins over the feature ConfigMap for its object",
          "[myresource][operator][features]") {
  testenv::ScopedNamespace ns("mr-flags-override");
  set_feature_flags(ns.name(), {{"canary", "false"}});
  OperatorProcess operator_process({.user = "myop-flags-override",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {}});
  operator_process.start();

  // The ConfigMap says no canaries; "override" says yes for itself.
  testenv::kubectl_apply(
      myresource_manifest(ns.name(), "plain", "nginx:1.27.1", 1, "", canary_annotations("1.28.0")));
  testenv::kubectl_apply(myresource_manifest(ns.name(), "override", "nginx:1.27.1", 1, "",
                                             canary_annotations("1.28.0", "canary=true")));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "plain", "CanaryDisabled"); }, 120s));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "override", "CanaryRunning"); }, 60s));
  CHECK(deployment_exists(ns.name(), "override-canary"));
  CHECK(deployment_gone(ns.name(), "plain-canary"));

  // The other way round: the ConfigMap allows canaries, "plain" now says no for itself, and a
  // third object without an override shows that the ConfigMap change has been seen.
  testenv::kubectl_or_fail("annotate myresources.v1alpha1.myorg.io plain -n " + ns.name() +
                           " myorg.io/features=canary=false");
  testenv::kubectl_apply(
      myresource_manifest(ns.name(), "follower", "nginx:1.27.1", 1, "", canary_annotations("1.28.0")));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "follower", "CanaryDisabled"); }, 60s));
  set_feature_flags(ns.name(), {{"canary", "true"}});
  REQUIRE(eventually([&] { return deployment_exists(ns.name(), "follower-canary"); }, 60s));
  REQUIRE(eventually([&] { return canary_is(ns.name(), "follower", "CanaryRunning"); }, 30s));
  // The change enqueued every MyResource ("follower" shows it was seen); the operator is done with all.
  operator_process.wait_until_settled();
  CHECK(canary_is(ns.name(), "plain", "CanaryDisabled"));
  CHECK(deployment_gone(ns.name(), "plain-canary"));
  CHECK(canary_is(ns.name(), "override", "CanaryRunning"));

  // Without its override, "plain" follows the ConfigMap again.
  testenv::kubectl_or_fail("annotate myresources.v1alpha1.myorg.io plain -n " + ns.name() +
                           " myorg.io/features-");
  CHECK(eventually([&] { return deployment_exists(ns.name(), "plain-canary"); }, 60s));
  CHECK(eventually([&] { return canary_is(ns.name(), "plain", "CanaryRunning"); }, 30s));
}

TEST_CASE(
    "an invalid myorg.io/features override is reported as a Warning event, its valid part still applies",
    "[myresource][operator][features]") {
  testenv::ScopedNamespace ns("mr-flags-invalid");
  OperatorProcess operator_process({.user = "myop-flags-invalid",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {}});
  operator_process.start();

  // "maybe" is not a boolean: the flag keeps its ConfigMap value (the default, on).
  testenv::kubectl_apply(myresource_manifest(ns.name(), "maybe", "nginx:1.27.1", 1, "",
                                             canary_annotations("1.28.0", "canary=maybe")));
  // An unknown flag next to a valid one: the valid one (canary off) applies.
  testenv::kubectl_apply(myresource_manifest(ns.name(), "typo", "nginx:1.27.1", 1, "",
                                             canary_annotations("1.28.0", "canary=false,colour=red")));

  REQUIRE(eventually(
      [&] { return has_event(ns.name(), "MyResource", "maybe", "Warning", "InvalidFeatureOverride"); },
      120s));
  const auto maybe_events = events_about(ns.name(), "MyResource", "maybe");
  INFO("events about maybe:\n" << describe(maybe_events));
  bool names_value = false;
  for (const auto& event : maybe_events)
    names_value = names_value || event.find("canary=\"maybe\" is not a boolean") != std::string::npos;
  CHECK(names_value);
  CHECK(eventually([&] { return canary_is(ns.name(), "maybe", "CanaryRunning"); }, 60s));
  CHECK(eventually([&] { return deployment_exists(ns.name(), "maybe-canary"); }, 30s));
  CHECK(eventually([&] { return myresource_ready(ns.name(), "maybe"); }, 60s));

  REQUIRE(eventually(
      [&] { return has_event(ns.name(), "MyResource", "typo", "Warning", "InvalidFeatureOverride"); }, 60s));
  const auto typo_events = events_about(ns.name(), "MyResource", "typo");
  INFO("events about typo:\n" << describe(typo_events));
  bool names_flag = false;
  for (const auto& event : typo_events)
    names_flag = names_flag || event.find("unknown feature flag \"colour\"") != std::string::npos;
  CHECK(names_flag);
  CHECK(eventually([&] { return canary_is(ns.name(), "typo", "CanaryDisabled"); }, 60s));
  CHECK(deployment_gone(ns.name(), "typo-canary"));
  CHECK(eventually([&] { return myresource_ready(ns.name(), "typo"); }, 60s));
  CHECK(operator_process.running());
}
