#include "myresource/deployment_state.h"

#include <catch2/catch.hpp>

#include "fixtures.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;

TEST_CASE("observe_deployment reads what the decisions need", "[myresource][deployment]") {
  auto live = parse_json(R"({"metadata":{"name":"web-canary","uid":"d-1","generation":5,
      "creationTimestamp":"2026-01-01T00:00:00Z",
      "annotations":{"myorg.io/spec-hash":"abc","myorg.io/canary-started-at":"2026-01-01T00:00:01Z"}},
    "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"sidecar","image":"side:1"},
                                                              {"name":"app","image":"app:2"}]}}},
    "status":{"observedGeneration":5,"replicas":2,"readyReplicas":1,"updatedReplicas":2,"availableReplicas":1,
              "conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}})");
  DeploymentState state = observe_deployment(live.json());
  CHECK(state.name == "web-canary");
  CHECK(state.generation == 5);
  CHECK(state.observed_generation == 5);
  CHECK(state.desired_replicas == 2);
  CHECK(state.ready_replicas == 1);
  CHECK(state.updated_replicas == 2);
  CHECK(state.available_replicas == 1);
  CHECK(state.image == "app:2");  // the container named "app", not the first one
  CHECK(state.spec_hash == "abc");
  CHECK(state.canary_started_at == "2026-01-01T00:00:01Z");
  CHECK(state.progress_deadline_exceeded);
  CHECK_FALSE(state.rolled_out());
}

TEST_CASE("rolled_out needs the latest generation, all replicas updated and available, none extra",
          "[myresource][deployment]") {
  DeploymentState done;
  done.generation = 2;
  done.observed_generation = 2;
  done.desired_replicas = 3;
  done.replicas = 3;
  done.updated_replicas = 3;
  done.available_replicas = 3;
  CHECK(done.rolled_out());

  DeploymentState stale = done;
  stale.observed_generation = 1;
  CHECK_FALSE(stale.rolled_out());
  DeploymentState old_pods_left = done;
  old_pods_left.replicas = 4;
  CHECK_FALSE(old_pods_left.rolled_out());
  DeploymentState not_available = done;
  not_available.available_replicas = 2;
  CHECK_FALSE(not_available.rolled_out());
  DeploymentState scaled_to_zero;
  CHECK(scaled_to_zero.rolled_out());
}

TEST_CASE("a Deployment without status reads as nothing ready, default replicas 1",
          "[myresource][deployment]") {
  auto live = parse_json(R"({"metadata":{"name":"web","generation":1},"spec":{}})");
  DeploymentState state = observe_deployment(live.json());
  CHECK(state.desired_replicas == 1);
  CHECK(state.available_replicas == 0);
  CHECK(state.image.empty());
  CHECK_FALSE(state.rolled_out());
}

TEST_CASE("a foreground deletion counts as stuck after the pods' grace period plus the slack",
          "[myresource][deployment]") {
  using namespace std::chrono;
  const auto deleted_at = sys_days(year(2026) / 3 / 1) + hours(12);
  const auto deployment = [](const std::string& metadata, const std::string& pod_spec) {
    return parse_json(R"({"metadata":{"name":"web",)" + metadata + R"(},"spec":{"template":{"spec":)" +
                      pod_spec + "}}}");
  };
  const std::string foreground =
      R"("deletionTimestamp":"2026-03-01T12:00:00Z","finalizers":["example.com/keep","foregroundDeletion"])";

  // Pods' grace period absent: the API's default, 30 s.
  auto default_grace = deployment(foreground, "{}");
  CHECK(foreground_deletion_time_left(default_grace.json(), deleted_at, seconds(60)) == seconds(90));
  CHECK(foreground_deletion_time_left(default_grace.json(), deleted_at + seconds(89), seconds(60)) ==
        seconds(1));
  CHECK(foreground_deletion_time_left(default_grace.json(), deleted_at + seconds(95), seconds(60)) ==
        -seconds(5));

  // A longer grace period is waited for in full.
  auto long_grace = deployment(foreground, R"({"terminationGracePeriodSeconds":600})");
  CHECK(foreground_deletion_time_left(long_grace.json(), deleted_at + seconds(100), seconds(60)) ==
        seconds(560));

  // Not a foreground deletion: not deleted, another finalizer only, or a timestamp that does not parse.
  CHECK_FALSE(
      foreground_deletion_time_left(deployment(R"("uid":"d-1")", "{}").json(), deleted_at, seconds(60)));
  CHECK_FALSE(foreground_deletion_time_left(
      deployment(R"("deletionTimestamp":"2026-03-01T12:00:00Z","finalizers":["example.com/keep"])", "{}")
          .json(),
      deleted_at + hours(1), seconds(60)));
  CHECK_FALSE(foreground_deletion_time_left(
      deployment(R"("deletionTimestamp":"yesterday","finalizers":["foregroundDeletion"])", "{}").json(),
      deleted_at + hours(1), seconds(60)));
}
