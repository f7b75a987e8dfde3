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
