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
  // v1alpha1 is read as v1beta1: the annotation became spec.canary.enabled.
  CHECK_FALSE(resource.metadata.annotation(kCanaryAnnotation));
  CHECK(resource.spec.canary.enabled);
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
  CHECK(resource.spec.canary == CanarySettings{2, 30, false, ""});
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

TEST_CASE("parse_myresource reads v1beta1 spec.canary and spec.features as typed fields",
          "[myresource][types]") {
  auto parsed = parse(R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web"},
    "spec":{"image":"app:1","canary":{"enabled":true,"targetVersion":"1.2","replicas":2},
            "features":{"canary":false,"orphanSweep":true,"orphanPolicy":"delete"}}})");
  CHECK(parsed.valid());
  CHECK(parsed.feature_problems.empty());
  const Spec& spec = parsed.resource.spec;
  CHECK(spec.canary.enabled);
  CHECK(spec.canary.target_version == "1.2");
  CHECK(spec.canary.replicas == 2);
  CHECK(spec.canary.progress_deadline_seconds == 600);
  CHECK(spec.features.canary == false);
  CHECK(spec.features.orphan_sweep == true);
  CHECK(spec.features.orphan_policy == OrphanPolicy::Delete);

  // Absent: no canary, no override.
  auto plain = parse(R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web"},
    "spec":{"image":"app:1"}})");
  CHECK_FALSE(plain.resource.spec.canary.enabled);
  CHECK(plain.resource.spec.canary.target_version.empty());
  CHECK(plain.resource.spec.features == FeatureOverrides{});
}

TEST_CASE("bad v1beta1 canary fields are spec problems, bad spec.features members feature problems",
          "[myresource][types]") {
  auto parsed = parse(R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web"},
    "spec":{"image":"app:1","canary":{"enabled":"yes","targetVersion":7},
            "features":{"canary":"false","orphanPolicy":"Delete","colour":"red"}}})");
  CHECK(parsed.problems == std::vector<std::string>{"spec.canary.enabled must be true or false",
                                                    "spec.canary.targetVersion must be a string"});
  REQUIRE(parsed.feature_problems.size() == 3);
  CHECK(parsed.feature_problems[0] == "spec.features.canary must be true or false");
  CHECK(parsed.feature_problems[1] == "spec.features.orphanPolicy must be delete or report");
  CHECK_THAT(parsed.feature_problems[2], Catch::Contains("unknown feature flag \"colour\""));
  CHECK(parsed.resource.spec.features == FeatureOverrides{});
}

TEST_CASE("parse_myresource gives a v1alpha1 object and its v1beta1 conversion the same Spec",
          "[myresource][types]") {
  const std::string annotations =
      GENERATE(as<std::string>{}, "", R"("myorg.io/canary":"true")",
               R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.1")",
               R"("myorg.io/canary":"yes","myorg.io/targetVersion":"1.1")",
               R"("myorg.io/canary":"false","myorg.io/targetVersion":"")",
               R"("myorg.io/features":"canary=false,orphanPolicy=delete")",
               R"("myorg.io/features":" Canary = FALSE ,bogus=1,orphanSweep=maybe")",
               R"("myorg.io/canary":"true","team":"a","myorg.io/features":"")");
  const std::string spec =
      GENERATE(as<std::string>{}, R"({"image":"app:1.0","replicas":2})",
               R"({"image":"app:1.0","canary":{"replicas":3,"progressDeadlineSeconds":60}})",
               R"({"image":"app:latest","replicas":-1})");
  CAPTURE(annotations, spec);
  auto alpha = Object::parse(R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource",
      "metadata":{"name":"web","namespace":"team-a","uid":"u-1","annotations":{)" +
                             annotations + R"(}},"spec":)" + spec + "}");
  REQUIRE(alpha.ok());
  auto beta = convert_myresource(alpha->json(), kApiVersionV1beta1);
  REQUIRE(beta.ok());
  ParsedMyResource from_alpha = parse_myresource(alpha->json());
  ParsedMyResource from_beta = parse_myresource(beta->json());
  CHECK(from_alpha.resource.spec == from_beta.resource.spec);
  CHECK(from_alpha.problems == from_beta.problems);
  CHECK(from_alpha.feature_problems == from_beta.feature_problems);
  // The features text's own errors, as the v1alpha1 operator reported them.
  const std::string text = std::string(alpha->view().annotation(kFeaturesAnnotation).value_or(""));
  CHECK(from_beta.feature_problems == apply_feature_overrides(Features{}, text).errors);
}

TEST_CASE("a v1alpha1 features text's errors are reported while the object still says what it said",
          "[myresource][types]") {
  auto alpha =
      Object::parse(R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"web",
      "annotations":{"myorg.io/features":"canary=false,bogus=1"}},"spec":{"image":"app:1.0"}})");
  REQUIRE(alpha.ok());
  auto beta = convert_myresource(alpha->json(), kApiVersionV1beta1);
  REQUIRE(beta.ok());
  ParsedMyResource kept = parse_myresource(beta->json());
  CHECK(kept.resource.spec.features.canary == false);
  REQUIRE(kept.feature_problems.size() == 1);
  CHECK_THAT(
      kept.feature_problems[0],
      Catch::StartsWith("spec.features (v1alpha1: annotation myorg.io/features): unknown feature flag"));

  // Changed in v1beta1 since: the kept text no longer applies, and nothing is reported.
  Object changed = beta->deep_copy();
  changed.set_member(changed.json()["spec"]["features"], "canary", myop::kube::JsonValue(true));
  ParsedMyResource edited = parse_myresource(changed.json());
  CHECK(edited.resource.spec.features.canary == true);
  CHECK(edited.feature_problems.empty());
}
