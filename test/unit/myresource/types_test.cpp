#include "myresource/types.h"

#include <catch2/catch.hpp>

using namespace myop::myresource;
using myop::kube::Object;

namespace {

ParsedMyResource parse(const std::string& json) {
  auto object = Object::parse(json);
  REQUIRE(object.ok());
  return parse_myresource(object->json());
}

std::string with_spec(const std::string& spec) {
  return R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource",
    "metadata":{"name":"web","namespace":"team-a","uid":"u-1","generation":3,"resourceVersion":"77",
                "labels":{"app.kubernetes.io/instance":"argo-app"},
                "annotations":{"myorg.io/canary":"true"},"finalizers":["myorg.io/finalizer"]},
    "spec":)" +
         spec + "}";
}

}  // namespace

TEST_CASE("parse_myresource reads metadata, spec and defaults", "[myresource][types]") {
  auto parsed = parse(with_spec(R"({"image":"reg:5000/app:1.0"})"));
  CHECK(parsed.valid());
  const MyResource& resource = parsed.resource;
  CHECK(resource.metadata.name == "web");
  CHECK(resource.metadata.namespace_name == "team-a");
  CHECK(resource.metadata.uid == "u-1");
  CHECK(resource.metadata.generation == 3);
  CHECK(resource.metadata.has_finalizer(kFinalizer));
  CHECK(resource.metadata.annotation(kCanaryAnnotation) == "true");
  CHECK_FALSE(resource.metadata.deletion_timestamp);
  CHECK(resource.spec.image == "reg:5000/app:1.0");
  CHECK(resource.spec.replicas == 1);
  CHECK_FALSE(resource.spec.port);
  CHECK(resource.spec.canary.replicas == 1);
  CHECK(resource.spec.canary.progress_deadline_seconds == 600);
  CHECK_FALSE(resource.spec.progress_deadline_seconds);
  CHECK_FALSE(resource.spec.paused);
  CHECK_FALSE(resource.spec.automount_service_account_token);  // unset, not false
}

TEST_CASE("parse_myresource reads every spec field and the status", "[myresource][types]") {
  auto parsed = parse(R"({"metadata":{"name":"web","deletionTimestamp":"2026-01-01T00:00:00Z"},
    "spec":{"image":"app:1","replicas":3,"port":8080,"paused":true,"progressDeadlineSeconds":45,
    "automountServiceAccountToken":false,
            "env":[{"name":"A","value":"1"},{"name":"B"}],
            "resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":2}},
            "canary":{"replicas":2,"progressDeadlineSeconds":30}},
    "status":{"observedGeneration":2,"specHash":"abc","image":"app:0","replicas":3,"readyReplicas":2,
              "updatedReplicas":1,"replicaSummary":"2/3",
              "conditions":[{"type":"Ready","status":"True","reason":"Available","message":"m",
                             "observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"},
                            {"type":"Broken"}]}})");
  CHECK(parsed.valid());
  const MyResource& resource = parsed.resource;
  CHECK(resource.metadata.deletion_timestamp == "2026-01-01T00:00:00Z");
  CHECK(resource.spec.replicas == 3);
  CHECK(resource.spec.port == 8080);
  CHECK(resource.spec.progress_deadline_seconds == 45);
  CHECK(resource.spec.paused);
  CHECK(resource.spec.automount_service_account_token == false);
  CHECK(resource.spec.env == std::vector<EnvVar>{{"A", "1"}, {"B", ""}});
  CHECK(resource.spec.resources.requests ==
        std::map<std::string, std::string>{{"cpu", "100m"}, {"memory", "64Mi"}});
  CHECK(resource.spec.resources.limits == std::map<std::string, std::string>{{"cpu", "2"}});
  CHECK(resource.spec.canary == CanarySettings{2, 30});
  CHECK(resource.status.observed_generation == 2);
  CHECK(resource.status.spec_hash == "abc");
  CHECK(resource.status.ready_replicas == 2);
  CHECK(resource.status.replica_summary == "2/3");
  REQUIRE(resource.status.conditions.size() == 1);  // the malformed one is dropped
  CHECK(resource.status.conditions[0].status == ConditionStatus::True);
  CHECK(resource.status.conditions[0].last_transition_time == "2026-01-01T00:00:00Z");
}

TEST_CASE("an invalid spec that got past the API server is reported, field by field", "[myresource][types]") {
  struct Case {
    std::string spec;
    std::string expected;
  };
  auto [spec, expected] = GENERATE(values<Case>({
      {R"({})", "spec.image is required"},
      {R"({"image":"nginx"})", "must carry a tag or a digest"},
      {R"({"image":"nginx:latest"})", "must not use the :latest tag"},
      {R"({"image":"reg:5000/app"})", "must carry a tag or a digest"},
      {R"({"image":"NGINX:1"})", "not a valid image reference"},
      {R"({"image":7})", "spec.image must be a string"},
      {R"({"image":"a:1","replicas":1001})", "spec.replicas must be between 0 and 1000, not 1001"},
      {R"({"image":"a:1","replicas":-1})", "spec.replicas must be between 0 and 1000"},
      {R"({"image":"a:1","replicas":"3"})", "spec.replicas must be an integer"},
      {R"({"image":"a:1","replicas":3000000000})", "spec.replicas must be a 32-bit integer"},
      {R"({"image":"a:1","port":0})", "spec.port must be a TCP port between 1 and 65535, not 0"},
      {R"({"image":"a:1","port":70000})", "spec.port must be a TCP port"},
      {R"({"image":"a:1","env":[{"name":"1BAD"}]})", "spec.env[].name \"1BAD\""},
      {R"({"image":"a:1","env":[{"name":"A"},{"name":"A"}]})", "more than once"},
      {R"({"image":"a:1","env":{"A":"1"}})", "spec.env must be a list"},
      {R"({"image":"a:1","resources":{"limits":{"cpu":true}}})",
       "spec.resources.limits.cpu must be a quantity"},
      {R"({"image":"a:1","paused":"yes"})", "spec.paused must be true or false"},
      {R"({"image":"a:1","automountServiceAccountToken":"no"})",
       "spec.automountServiceAccountToken must be true or false"},
      {R"({"image":"a:1","canary":{"replicas":0}})", "spec.canary.replicas must be between 1 and 1000"},
      {R"({"image":"a:1","canary":{"progressDeadlineSeconds":0}})",
       "spec.canary.progressDeadlineSeconds must be between"},
      {R"({"image":"a:1","progressDeadlineSeconds":86401})", "spec.progressDeadlineSeconds must be between"},
  }));
  CAPTURE(spec);
  auto parsed = parse(with_spec(spec));
  CHECK_FALSE(parsed.valid());
  CHECK_THAT(parsed.problem_message(), Catch::Contains(expected));
  CHECK(parsed.resource.metadata.name == "web");  // still known, so status can say what is wrong
}

TEST_CASE("several problems are all reported", "[myresource][types]") {
  auto parsed = parse(with_spec(R"({"image":"nginx","replicas":5000,"port":0})"));
  CHECK(parsed.problems.size() == 3);
  CHECK_THAT(parsed.problem_message(), Catch::Contains("; "));
}

TEST_CASE("missing spec and overlong names are problems", "[myresource][types]") {
  CHECK_THAT(parse(R"({"metadata":{"name":"web"}})").problem_message(), Catch::Contains("spec is required"));
  auto parsed = parse(R"({"metadata":{"name":")" + std::string(64, 'a') + R"("},"spec":{"image":"a:1"}})");
  CHECK_THAT(parsed.problem_message(), Catch::Contains("at most 63 characters"));
}
