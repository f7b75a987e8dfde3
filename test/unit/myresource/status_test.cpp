#include "myresource/status.h"

#include <catch2/catch.hpp>

#include "fixtures.h"
#include "kube/canonical_json.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;
using namespace std::chrono;
using myop::base::format_rfc3339;

namespace {

const WallTime kNow = sys_days(year(2026) / 3 / 1) + hours(12);

DeploymentState stable_state(std::int32_t available, std::string hash = "h1") {
  DeploymentState state;
  state.name = "web";
  state.generation = 2;
  state.observed_generation = 2;
  state.desired_replicas = 3;
  state.replicas = 3;
  state.updated_replicas = 3;
  state.ready_replicas = available;
  state.available_replicas = available;
  state.image = "reg:5000/team/app:1.0";
  state.spec_hash = std::move(hash);
  return state;
}

StatusInputs inputs_with(std::optional<DeploymentState> stable, std::string desired_hash = "h1") {
  StatusInputs inputs;
  inputs.stable = std::move(stable);
  inputs.desired_spec_hash = std::move(desired_hash);
  return inputs;
}

const Condition& condition(const Status& status, std::string_view type) {
  const Condition* found = find_condition(status.conditions, type);
  REQUIRE(found != nullptr);
  return *found;
}

void check(const Status& status, std::string_view type, ConditionStatus expected_status,
           std::string_view expected_reason) {
  CAPTURE(type);
  CHECK(condition(status, type).status == expected_status);
  CHECK(condition(status, type).reason == expected_reason);
  CHECK(condition(status, type).observed_generation == 4);
}

}  // namespace

TEST_CASE("a rolled-out stable Deployment is Ready/Available", "[myresource][status]") {
  MyResource resource = make_resource();
  Status status = compute_status(resource, inputs_with(stable_state(3)), kNow);
  CHECK(status.observed_generation == 4);
  CHECK(status.spec_hash == "h1");
  CHECK(status.image == "reg:5000/team/app:1.0");
  CHECK(status.replicas == 3);
  CHECK(status.ready_replicas == 3);
  CHECK(status.updated_replicas == 3);
  CHECK(status.replica_summary == "3/3");
  check(status, "Ready", ConditionStatus::True, "Available");
  check(status, "Progressing", ConditionStatus::False, "Available");
  check(status, "Degraded", ConditionStatus::False, "AsExpected");
  CHECK(condition(status, "Ready").last_transition_time == format_rfc3339(kNow));
}

TEST_CASE("condition table: what the live state and the reconcile imply", "[myresource][status]") {
  struct Case {
    const char* what;
    std::optional<DeploymentState> stable;
    std::string desired_hash;
    bool paused;
    std::vector<std::string> problems;
    std::optional<std::string> error;
    std::string ready_reason;
    ConditionStatus ready;
    std::string progressing_reason;
    std::string degraded_reason;
  };
  DeploymentState stuck = stable_state(1);
  stuck.progress_deadline_exceeded = true;
  auto scenario = GENERATE_COPY(values<Case>({
      {"no Deployment yet",
       std::nullopt,
       "h1",
       false,
       {},
       {},
       "RollingOut",
       ConditionStatus::False,
       "RollingOut",
       "AsExpected"},
      {"replicas not available",
       stable_state(1),
       "h1",
       false,
       {},
       {},
       "RollingOut",
       ConditionStatus::False,
       "RollingOut",
       "AsExpected"},
      {"live runs an older spec",
       stable_state(3, "h0"),
       "h1",
       false,
       {},
       {},
       "RollingOut",
       ConditionStatus::False,
       "RollingOut",
       "AsExpected"},
      {"rollout stuck",
       stuck,
       "h1",
       false,
       {},
       {},
       "RollingOut",
       ConditionStatus::False,
       "RollingOut",
       "ProgressDeadlineExceeded"},
      {"write failed",
       stable_state(3),
       "h1",
       false,
       {},
       std::string("409 Conflict"),
       "Available",
       ConditionStatus::True,
       "Available",
       "ReconcileError"},
      {"paused and serving",
       stable_state(3, "h0"),
       "h1",
       true,
       {},
       {},
       "Available",
       ConditionStatus::True,
       "Paused",
       "AsExpected"},
      {"paused, not serving",
       stable_state(0),
       "h1",
       true,
       {},
       {},
       "Paused",
       ConditionStatus::False,
       "Paused",
       "AsExpected"},
      {"invalid spec, old Deployment serving",
       stable_state(3),
       "",
       false,
       {"spec.image bad"},
       {},
       "Available",
       ConditionStatus::True,
       "InvalidSpec",
       "InvalidSpec"},
      {"invalid spec, nothing serving",
       std::nullopt,
       "",
       false,
       {"spec.image bad"},
       {},
       "InvalidSpec",
       ConditionStatus::False,
       "InvalidSpec",
       "InvalidSpec"},
  }));
  CAPTURE(scenario.what);
  MyResource resource = make_resource();
  resource.spec.paused = scenario.paused;
  StatusInputs inputs = inputs_with(scenario.stable, scenario.desired_hash);
  inputs.spec_problems = scenario.problems;
  inputs.reconcile_error = scenario.error;
  Status status = compute_status(resource, inputs, kNow);
  check(status, "Ready", scenario.ready, scenario.ready_reason);
  CHECK(condition(status, "Progressing").reason == scenario.progressing_reason);
  CHECK(condition(status, "Degraded").reason == scenario.degraded_reason);
  CHECK(condition(status, "Degraded").status ==
        (scenario.degraded_reason == "AsExpected" ? ConditionStatus::False : ConditionStatus::True));
}

TEST_CASE("the InvalidSpec message names every problem", "[myresource][status]") {
  MyResource resource = make_resource();
  StatusInputs inputs = inputs_with(std::nullopt, "");
  inputs.spec_problems = {"spec.image must carry a tag", "spec.port must be a TCP port"};
  Status status = compute_status(resource, inputs, kNow);
  CHECK_THAT(condition(status, "Degraded").message,
             Catch::Contains("spec.image must carry a tag; spec.port must be a TCP port"));
}

TEST_CASE("deletion shows Deleting, and CleanupFailed when cleanup fails", "[myresource][status]") {
  MyResource resource = make_resource();
  StatusInputs inputs = inputs_with(stable_state(3));
  inputs.deleting = true;
  Status deleting = compute_status(resource, inputs, kNow);
  check(deleting, "Ready", ConditionStatus::False, "Deleting");
  check(deleting, "Degraded", ConditionStatus::False, "AsExpected");
  inputs.cleanup_error = "forbidden: deployments.apps \"web\"";
  Status failed = compute_status(resource, inputs, kNow);
  check(failed, "Degraded", ConditionStatus::True, "CleanupFailed");
  CHECK_THAT(condition(failed, "Degraded").message, Catch::Contains("forbidden"));
}

TEST_CASE("an unchanged world gives an unchanged status: no write", "[myresource][status]") {
  MyResource resource = make_resource();
  resource.status = compute_status(resource, inputs_with(stable_state(3)), kNow);
  Status again = compute_status(resource, inputs_with(stable_state(3)), kNow + hours(10));
  CHECK_FALSE(status_changed(resource.status, again));
  CHECK(condition(again, "Ready").last_transition_time == format_rfc3339(kNow));

  // Reordered conditions (as another client may write them) are still the same status.
  MyResource reordered = resource;
  std::reverse(reordered.status.conditions.begin(), reordered.status.conditions.end());
  CHECK_FALSE(
      status_changed(reordered.status, compute_status(reordered, inputs_with(stable_state(3)), kNow)));
}

TEST_CASE("every real change is a status change", "[myresource][status]") {
  MyResource resource = make_resource();
  resource.status = compute_status(resource, inputs_with(stable_state(3)), kNow);
  auto change = GENERATE(as<std::string>{}, "generation", "ready", "hash", "image", "canary");
  CAPTURE(change);
  MyResource next = resource;
  DeploymentState stable = stable_state(3);
  StatusInputs inputs;
  if (change == "generation") next.metadata.generation = 5;
  if (change == "ready") stable = stable_state(2);
  if (change == "hash") stable.spec_hash = "h2";
  if (change == "image") stable.image = "reg:5000/team/app:2.0";
  inputs = inputs_with(stable, change == "hash" ? "h2" : "h1");
  if (change == "canary") {
    CanaryDecision canary;
    canary.phase = CanaryPhase::Running;
    canary.plan.image = "reg:5000/team/app:1.1";
    canary.condition = Condition{"Canary", ConditionStatus::True, "CanaryRunning", "runs", 4, ""};
    inputs.canary = canary;
  }
  Status status = compute_status(next, inputs, kNow + minutes(1));
  CHECK(status_changed(resource.status, status));
  if (change == "ready") {
    // Ready flipped True -> False: its time moves; Degraded did not flip: its time stays.
    CHECK(condition(status, "Ready").last_transition_time == format_rfc3339(kNow + minutes(1)));
    CHECK(condition(status, "Degraded").last_transition_time == format_rfc3339(kNow));
  }
  if (change == "canary") CHECK(status.canary_image == "reg:5000/team/app:1.1");
}

TEST_CASE("the Canary condition follows the canary decision", "[myresource][status]") {
  MyResource resource = make_resource();
  resource.status.canary_image = "app:1.1";
  resource.status.conditions.push_back({"Canary", ConditionStatus::True, "CanaryRunning", "", 4, "t0"});
  resource.status.conditions.push_back({"SomeoneElses", ConditionStatus::True, "X", "", 1, "t0"});

  StatusInputs not_evaluated = inputs_with(stable_state(3));  // paused or invalid: keep as is
  Status kept = compute_status(resource, not_evaluated, kNow);
  CHECK(find_condition(kept.conditions, "Canary") != nullptr);
  CHECK(kept.canary_image == "app:1.1");

  StatusInputs removed = inputs_with(stable_state(3));
  removed.canary = CanaryDecision{};  // NotRequested: no condition
  Status without = compute_status(resource, removed, kNow);
  CHECK(find_condition(without.conditions, "Canary") == nullptr);
  CHECK(without.canary_image.empty());
  CHECK(find_condition(without.conditions, "SomeoneElses") != nullptr);  // not ours: untouched
}

TEST_CASE("status_apply_body is the status subresource apply request", "[myresource][status]") {
  MyResource resource = make_resource();
  Status status = compute_status(resource, inputs_with(stable_state(2)), kNow);
  myop::kube::Object body = status_apply_body(resource, status);
  auto view = body.view();
  CHECK(view.api_version() == "myorg.io/v1beta1");
  CHECK(view.kind() == "MyResource");
  CHECK(view.name() == "web");
  CHECK(view.namespace_name() == "team-a");
  CHECK(view.find({"spec"}) == nullptr);
  const auto* written = view.find({"status"});
  REQUIRE(written != nullptr);
  CHECK((*written)["observedGeneration"].GetInt64() == 4);
  CHECK(std::string((*written)["replicaSummary"].GetString()) == "2/3");
  CHECK_FALSE(written->HasMember("canaryImage"));  // empty: left out so apply removes it
  REQUIRE((*written)["conditions"].Size() == 3);
  const auto& ready = (*written)["conditions"][0];
  CHECK(
      myop::kube::canonical_json(ready) ==
      R"({"lastTransitionTime":"2026-03-01T12:00:00Z","message":"waiting for Deployment web to roll out: )"
      R"(3/3 updated, 2/3 available","observedGeneration":4,"reason":"RollingOut","status":"False","type":"Ready"})");

  // What is written reads back as the same status.
  std::string json = body.to_json_string();
  auto reparsed = parse_json(json);
  CHECK_FALSE(status_changed(status, parse_myresource(reparsed.json()).resource.status));
}
