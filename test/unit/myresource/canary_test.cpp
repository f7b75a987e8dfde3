#include "myresource/canary.h"

#include <catch2/catch.hpp>
#include <map>

#include "fixtures.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;
using namespace std::chrono;
using myop::base::format_rfc3339;

namespace {

const WallTime kStart = sys_days(year(2026) / 3 / 1) + hours(12);

MyResource canary_resource(std::string target = "1.1") {
  MyResource resource = make_resource("reg:5000/team/app:1.0");
  resource.metadata.annotations = {{"myorg.io/canary", "true"},
                                   {"myorg.io/targetVersion", std::move(target)}};
  resource.spec.canary.replicas = 2;
  resource.spec.canary.progress_deadline_seconds = 600;
  return resource;
}

// A live canary Deployment started at kStart running `image`, with `available` of 2 replicas available.
DeploymentState live_canary(std::string image = "reg:5000/team/app:1.1", std::int32_t available = 0,
                            std::int32_t desired = 2) {
  DeploymentState state;
  state.name = "web-canary";
  state.generation = 1;
  state.observed_generation = 1;
  state.desired_replicas = desired;
  state.replicas = desired;
  state.updated_replicas = desired;
  state.available_replicas = available;
  state.ready_replicas = available;
  state.image = std::move(image);
  state.canary_started_at = format_rfc3339(kStart);
  state.creation_timestamp = format_rfc3339(kStart);
  return state;
}

void record(MyResource& resource, const CanaryDecision& decision) {
  if (decision.condition) {
    set_condition(resource.status.conditions, *decision.condition, kStart);
  } else {
    remove_condition(resource.status.conditions, "Canary");
  }
}

// The canary settings of these tests are written as v1alpha1 annotations: `resource` is decided as
// the reconciler sees it, its annotations read through the conversion to v1beta1 (fixtures.h).
CanaryDecision decide(const MyResource& resource, const Features& features,
                      const std::optional<DeploymentState>& canary, WallTime now) {
  return decide_canary(read_v1alpha1_annotations(resource), features, canary, now);
}

}  // namespace

TEST_CASE("no annotation: no canary, and an existing one is removed", "[myresource][canary]") {
  MyResource resource = make_resource();
  auto none = decide(resource, Features{}, std::nullopt, kStart);
  CHECK(none.phase == CanaryPhase::NotRequested);
  CHECK(none.action == CanaryAction::None);
  CHECK_FALSE(none.condition);
  CHECK_FALSE(none.event);

  resource.metadata.annotations["myorg.io/canary"] = "false";
  resource.status.conditions.push_back({"Canary", ConditionStatus::True, "CanaryRunning", "", 3, "t"});
  auto removed = decide(resource, Features{}, live_canary(), kStart);
  CHECK(removed.action == CanaryAction::Delete);
  CHECK_FALSE(removed.condition);
  REQUIRE(removed.event);
  CHECK(removed.event->type == "Normal");
  CHECK(removed.event->reason == "CanaryRemoved");
}

TEST_CASE("a requested canary starts with the repository at the target tag", "[myresource][canary]") {
  struct Case {
    std::string image;
    std::string expected;
  };
  auto [image, expected] = GENERATE(values<Case>({
      {"reg:5000/team/app:1.0", "reg:5000/team/app:1.1"},
      {"reg:5000/app:1.0@sha256:" + std::string(64, 'b'), "reg:5000/app:1.1"},
      {"app@sha256:" + std::string(64, 'c'), "app:1.1"},
      {"docker.io/library/nginx:1.0", "docker.io/library/nginx:1.1"},
  }));
  CAPTURE(image);
  MyResource resource = canary_resource();
  resource.spec.image = image;
  auto decision = decide(resource, Features{}, std::nullopt, kStart);
  CHECK(decision.phase == CanaryPhase::Running);
  CHECK(decision.action == CanaryAction::Apply);
  CHECK(decision.plan.image == expected);
  CHECK(decision.plan.replicas == 2);
  CHECK(decision.plan.started_at == format_rfc3339(kStart));
  REQUIRE(decision.condition);
  CHECK(decision.condition->status == ConditionStatus::True);
  CHECK(decision.condition->reason == "CanaryRunning");
  CHECK(decision.condition->observed_generation == 4);
  REQUIRE(decision.event);
  CHECK(decision.event->type == "Normal");
  CHECK(decision.event->reason == "CanaryRunning");
  REQUIRE(decision.requeue_after);
  CHECK(*decision.requeue_after == seconds(601));
}

TEST_CASE("a running canary keeps its start time and is announced once", "[myresource][canary]") {
  MyResource resource = canary_resource();
  record(resource, decide(resource, Features{}, std::nullopt, kStart));
  auto later = decide(resource, Features{}, live_canary("reg:5000/team/app:1.1", 1), kStart + minutes(3));
  CHECK(later.phase == CanaryPhase::Running);
  CHECK(later.plan.started_at == format_rfc3339(kStart));
  CHECK(later.requeue_after == seconds(421));
  CHECK_FALSE(later.event);  // same status and reason: no second event
  CHECK_THAT(later.condition->message, Catch::Contains("1/2 available"));

  auto available = decide(resource, Features{}, live_canary("reg:5000/team/app:1.1", 2), kStart + hours(2));
  CHECK(available.phase == CanaryPhase::Running);
  CHECK(available.plan.replicas == 2);
  CHECK_FALSE(available.requeue_after);
}

TEST_CASE("a canary not available by the deadline fails: scaled to 0, Warning", "[myresource][canary]") {
  struct Case {
    const char* what;
    DeploymentState live;
    seconds elapsed;
    bool failed;
  };
  DeploymentState native = live_canary();
  native.progress_deadline_exceeded = true;
  DeploymentState native_stale = native;
  native_stale.observed_generation = 0;  // the flag belongs to an older spec
  DeploymentState partly_available = live_canary("reg:5000/team/app:1.1", 1);
  auto scenario = GENERATE_COPY(values<Case>({
      {"before the deadline", live_canary(), seconds(599), false},
      {"at the deadline", live_canary(), seconds(600), true},
      {"Deployment controller reports ProgressDeadlineExceeded", native, seconds(10), true},
      {"stale ProgressDeadlineExceeded", native_stale, seconds(10), false},
      {"some replicas available after the deadline", partly_available, seconds(900), false},
      {"available in time", live_canary("reg:5000/team/app:1.1", 2), seconds(900), false},
  }));
  CAPTURE(scenario.what);
  MyResource resource = canary_resource();
  auto decision = decide(resource, Features{}, scenario.live, kStart + scenario.elapsed);
  CHECK((decision.phase == CanaryPhase::Failed) == scenario.failed);
  if (scenario.failed) {
    CHECK(decision.action == CanaryAction::Apply);
    CHECK(decision.plan.replicas == 0);
    CHECK(decision.plan.started_at == format_rfc3339(kStart));
    CHECK(decision.condition->status == ConditionStatus::False);
    CHECK(decision.condition->reason == "CanaryFailed");
    CHECK_THAT(decision.condition->message, Catch::Contains("stable Deployment untouched"));
    REQUIRE(decision.event);
    CHECK(decision.event->type == "Warning");
    CHECK(decision.event->reason == "CanaryFailed");
  }
}

TEST_CASE("a failed canary stays failed until the target changes", "[myresource][canary]") {
  MyResource resource = canary_resource();
  DeploymentState native = live_canary();
  native.progress_deadline_exceeded = true;
  auto failed = decide(resource, Features{}, native, kStart + seconds(30));
  REQUIRE(failed.phase == CanaryPhase::Failed);
  record(resource, failed);

  // Scaled to 0, the Deployment looks complete to the Deployment controller; still failed, no new event.
  DeploymentState scaled = live_canary("reg:5000/team/app:1.1", 0, 0);
  auto again = decide(resource, Features{}, scaled, kStart + seconds(40));
  CHECK(again.phase == CanaryPhase::Failed);
  CHECK(again.plan.replicas == 0);
  CHECK_FALSE(again.event);

  // A new target starts a new canary with a fresh clock.
  MyResource retarget = resource;
  retarget.metadata.annotations["myorg.io/targetVersion"] = "1.2";
  auto retry = decide(retarget, Features{}, scaled, kStart + hours(1));
  CHECK(retry.phase == CanaryPhase::Running);
  CHECK(retry.plan.image == "reg:5000/team/app:1.2");
  CHECK(retry.plan.replicas == 2);
  CHECK(retry.plan.started_at == format_rfc3339(kStart + hours(1)));
  REQUIRE(retry.event);
  CHECK(retry.event->reason == "CanaryRunning");
}

TEST_CASE("spec.image reaching the target promotes: canary removed", "[myresource][canary]") {
  MyResource resource = canary_resource();
  record(resource, decide(resource, Features{}, std::nullopt, kStart));
  resource.spec.image = "reg:5000/team/app:1.1";
  auto promoted = decide(resource, Features{}, live_canary("reg:5000/team/app:1.1", 2), kStart);
  CHECK(promoted.phase == CanaryPhase::Promoted);
  CHECK(promoted.action == CanaryAction::Delete);
  CHECK(promoted.condition->status == ConditionStatus::False);
  CHECK(promoted.condition->reason == "CanaryPromoted");
  REQUIRE(promoted.event);
  CHECK(promoted.event->type == "Normal");
  record(resource, promoted);

  auto settled = decide(resource, Features{}, std::nullopt, kStart);
  CHECK(settled.phase == CanaryPhase::Promoted);
  CHECK(settled.action == CanaryAction::None);
  CHECK_FALSE(settled.event);
}

TEST_CASE("bad target versions and disabled flags run no canary and say why", "[myresource][canary]") {
  struct Case {
    std::string target;
    bool canary_flag;
    std::string reason;
    std::string message;
  };
  auto [target, canary_flag, reason, message] = GENERATE(values<Case>({
      {"", true, "InvalidSpec", "myorg.io/targetVersion is missing"},
      {"1.1/x", true, "InvalidSpec", "is not a valid image tag"},
      {"-1", true, "InvalidSpec", "is not a valid image tag"},
      {"latest", true, "InvalidSpec", "must not be \"latest\""},
      {"1.1", false, "CanaryDisabled", "switched off"},
  }));
  CAPTURE(target);
  MyResource resource = canary_resource(target);
  if (target.empty()) resource.metadata.annotations.erase("myorg.io/targetVersion");
  Features features;
  features.canary = canary_flag;
  auto decision = decide(resource, features, live_canary(), kStart);
  CHECK(decision.action == CanaryAction::Delete);
  REQUIRE(decision.condition);
  CHECK(decision.condition->status == ConditionStatus::False);
  CHECK(decision.condition->reason == reason);
  CHECK_THAT(decision.condition->message, Catch::Contains(message));
  REQUIRE(decision.event);
  CHECK(decision.event->type == "Warning");
}

namespace {

// The same canary settings written twice: as v1alpha1 annotations, and as the v1beta1 fields.
struct Spelling {
  std::string name;
  std::map<std::string, std::string, std::less<>> annotations;  // v1alpha1
  CanarySettings hub;                                           // v1beta1 (enabled, targetVersion)
  FeatureOverrides features;                                    // v1beta1 spec.features
};

CanarySettings hub_canary(bool enabled, std::string target) {
  CanarySettings settings;
  settings.enabled = enabled;
  settings.target_version = std::move(target);
  settings.replicas = 2;
  settings.progress_deadline_seconds = 600;
  return settings;
}

}  // namespace

TEST_CASE("v1beta1 spec.canary and spec.features decide as their v1alpha1 annotations do",
          "[myresource][canary]") {
  auto spelling = GENERATE(values<Spelling>({
      {"running",
       {{"myorg.io/canary", "true"}, {"myorg.io/targetVersion", "1.1"}},
       hub_canary(true, "1.1"),
       {}},
      {"not requested", {}, hub_canary(false, ""), {}},
      {"false",
       {{"myorg.io/canary", "false"}, {"myorg.io/targetVersion", "1.1"}},
       hub_canary(false, "1.1"),
       {}},
      {"yes is no canary",
       {{"myorg.io/canary", "yes"}, {"myorg.io/targetVersion", "1.1"}},
       hub_canary(false, "1.1"),
       {}},
      {"no target", {{"myorg.io/canary", "true"}}, hub_canary(true, ""), {}},
      {"latest",
       {{"myorg.io/canary", "true"}, {"myorg.io/targetVersion", "latest"}},
       hub_canary(true, "latest"),
       {}},
      {"bad tag",
       {{"myorg.io/canary", "true"}, {"myorg.io/targetVersion", "1.1/x"}},
       hub_canary(true, "1.1/x"),
       {}},
      {"promoted",
       {{"myorg.io/canary", "true"}, {"myorg.io/targetVersion", "1.0"}},
       hub_canary(true, "1.0"),
       {}},
      {"switched off for the object",
       {{"myorg.io/canary", "true"},
        {"myorg.io/targetVersion", "1.1"},
        {"myorg.io/features", "canary=false"}},
       hub_canary(true, "1.1"),
       FeatureOverrides{false, std::nullopt, std::nullopt}},
  }));
  CAPTURE(spelling.name);
  auto live =
      GENERATE(as<std::optional<DeploymentState>>{}, std::nullopt, live_canary("reg:5000/team/app:1.1", 1));

  MyResource alpha = make_resource("reg:5000/team/app:1.0");
  alpha.metadata.annotations = spelling.annotations;
  alpha.spec.canary.replicas = 2;
  alpha.status.conditions.push_back({"Canary", ConditionStatus::True, "CanaryRunning", "", 3, "t"});
  const MyResource alpha_read = read_v1alpha1_annotations(alpha);

  MyResource beta = alpha;
  beta.metadata.annotations.clear();
  beta.spec.canary = spelling.hub;
  beta.spec.features = spelling.features;

  CHECK(alpha_read.spec == beta.spec);
  for (Features flags : {Features{}, Features{false, true, OrphanPolicy::Report}}) {
    CanaryDecision from_alpha = decide_canary(alpha_read, with_overrides(flags, alpha_read.spec.features),
                                              live, kStart + seconds(30));
    CanaryDecision from_beta =
        decide_canary(beta, with_overrides(flags, beta.spec.features), live, kStart + seconds(30));
    CHECK(to_string(from_beta.phase) == to_string(from_alpha.phase));
    CHECK(from_beta.action == from_alpha.action);
    CHECK(from_beta.plan.image == from_alpha.plan.image);
    CHECK(from_beta.plan.replicas == from_alpha.plan.replicas);
    CHECK(from_beta.plan.started_at == from_alpha.plan.started_at);
    CHECK(from_beta.condition == from_alpha.condition);
    CHECK(from_beta.event.has_value() == from_alpha.event.has_value());
    if (from_beta.event && from_alpha.event) {
      CHECK(from_beta.event->reason == from_alpha.event->reason);
      CHECK(from_beta.event->message == from_alpha.event->message);
    }
    CHECK(from_beta.requeue_after == from_alpha.requeue_after);
  }
}

TEST_CASE("a v1beta1 object runs its canary from spec.canary, and its messages name the v1beta1 fields",
          "[myresource][canary]") {
  ParsedMyResource parsed =
      parse_myresource(parse_json(R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource",
      "metadata":{"name":"web","namespace":"team-a","uid":"uid-1","generation":2},
      "spec":{"image":"reg:5000/team/app:1.0","canary":{"enabled":true,"targetVersion":"1.1","replicas":2}}})")
                           .json());
  REQUIRE(parsed.valid());
  auto running = decide_canary(parsed.resource, Features{}, std::nullopt, kStart);
  CHECK(running.phase == CanaryPhase::Running);
  CHECK(running.action == CanaryAction::Apply);
  CHECK(running.plan.image == "reg:5000/team/app:1.1");
  CHECK(running.plan.replicas == 2);

  parsed.resource.spec.canary.target_version = "latest";
  auto latest = decide_canary(parsed.resource, Features{}, std::nullopt, kStart);
  CHECK(latest.phase == CanaryPhase::InvalidTarget);
  REQUIRE(latest.condition);
  CHECK_THAT(latest.condition->message,
             Catch::StartsWith("spec.canary.targetVersion (v1alpha1: annotation myorg.io/targetVersion)"));

  parsed.resource.spec.canary.target_version = "1.1";
  parsed.resource.spec.features.canary = false;
  auto off = decide_canary(parsed.resource, with_overrides(Features{}, parsed.resource.spec.features),
                           std::nullopt, kStart);
  CHECK(off.phase == CanaryPhase::Disabled);
  REQUIRE(off.condition);
  CHECK_THAT(off.condition->message, Catch::Contains("canary: false in spec.features"));
}
