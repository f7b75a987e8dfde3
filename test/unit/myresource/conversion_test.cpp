// MyResource conversion v1alpha1 <-> v1beta1 (src/myresource/conversion.h): each moved field both
// ways, what is copied untouched, the values kept for the other version, the errors, and a property
// test over random objects of both versions.
#include "myresource/conversion.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "kube/canonical_json.h"
#include "myresource/effective_canary.h"
#include "myresource/features.h"
#include "myresource/types.h"

using namespace myop;
using namespace myop::myresource;
using myop::myresource::testing::parse_json;

namespace {

kube::Object convert_to(const kube::JsonValue& object, std::string_view api_version) {
  auto result = convert_myresource(object, api_version);
  INFO((result.ok() ? std::string() : result.error().to_string()));
  REQUIRE(result.ok());
  return std::move(result).value();
}

std::string canonical(const kube::JsonValue* value) {
  return value == nullptr ? "(absent)" : kube::canonical_json(*value);
}

std::string canonical_at(const kube::Object& object, std::initializer_list<std::string_view> path) {
  return canonical(object.view().find(path));
}

// The canary an object asks for (effective_canary.h), as text: whether one runs, and its target.
std::string canary_of(const kube::Object& object) {
  const EffectiveCanary canary = effective_canary(object.json());
  return std::string(canary.enabled ? "on " : "off ") + canary.target.value_or("(no target)");
}

// A v1alpha1 object with these annotations (JSON members, may be empty) and spec.canary (JSON, may be empty).
std::string alpha_object(const std::string& annotations, const std::string& canary = "") {
  return R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",)"
         R"("uid":"u-1","resourceVersion":"42","generation":3,"labels":{"team":"a"},"annotations":{"note":"kept")" +
         (annotations.empty() ? "" : "," + annotations) +
         R"(}},"spec":{"image":"reg:5000/team/app:1.0","replicas":2)" +
         (canary.empty() ? "" : ",\"canary\":" + canary) +
         R"(},"status":{"observedGeneration":3,"replicaSummary":"2/2"}})";
}

std::string beta_object(const std::string& spec_members, const std::string& annotations = "") {
  return R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",)"
         R"("uid":"u-1","resourceVersion":"42","generation":3,"labels":{"team":"a"},"annotations":{"note":"kept")" +
         (annotations.empty() ? "" : "," + annotations) +
         R"(}},"spec":{"image":"reg:5000/team/app:1.0","replicas":2)" +
         (spec_members.empty() ? "" : "," + spec_members) +
         R"(},"status":{"observedGeneration":3,"replicaSummary":"2/2"}})";
}

kube::JsonValue& member_at(kube::Object& object, std::initializer_list<std::string_view> path) {
  kube::JsonValue* value = &object.json();
  for (std::string_view key : path) {
    value = kube::find_member(*value, key);
    REQUIRE(value != nullptr);
  }
  return *value;
}

// The kept values of a converted object (conversion.h), or an empty object when there are none.
kube::Object kept_values(const kube::Object& object, std::string_view annotation) {
  std::optional<std::string_view> text = object.view().annotation(annotation);
  if (!text) return parse_json("{}");
  return parse_json(std::string(*text));
}

}  // namespace

TEST_CASE("conversion: each v1alpha1 annotation becomes its v1beta1 field and back",
          "[myresource][conversion]") {
  struct Case {
    std::string annotations;  // v1alpha1
    std::string canary;       // v1alpha1 spec.canary
    std::string beta_canary;  // v1beta1 spec.canary, canonical
    std::string beta_features;
  };
  auto [annotations, canary, beta_canary, beta_features] = GENERATE(values<Case>({
      {R"("myorg.io/canary":"true")", "", R"({"enabled":true})", "(absent)"},
      {R"("myorg.io/canary":"false")", "", R"({"enabled":false})", "(absent)"},
      {R"("myorg.io/targetVersion":"1.8.0")", "", R"({"targetVersion":"1.8.0"})", "(absent)"},
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"2.0")",
       R"({"replicas":2,"progressDeadlineSeconds":300})",
       R"({"enabled":true,"progressDeadlineSeconds":300,"replicas":2,"targetVersion":"2.0"})", "(absent)"},
      {R"("myorg.io/features":"canary=false")", "", "(absent)", R"({"canary":false})"},
      {R"("myorg.io/features":"orphanSweep=true,orphanPolicy=delete")", "", "(absent)",
       R"({"orphanPolicy":"delete","orphanSweep":true})"},
      {R"("myorg.io/features":"orphanPolicy=report,canary=true")", "", "(absent)",
       R"({"canary":true,"orphanPolicy":"report"})"},
      {R"("myorg.io/features":"")", "", "(absent)", "{}"},
      {"", R"({"replicas":1})", R"({"replicas":1})", "(absent)"},
  }));
  CAPTURE(annotations, canary);
  kube::Object alpha = parse_json(alpha_object(annotations, canary));
  kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);

  CHECK(beta.view().api_version() == kApiVersionV1beta1);
  CHECK(canonical_at(beta, {"spec", "canary"}) == beta_canary);
  CHECK(canonical_at(beta, {"spec", "features"}) == beta_features);
  // The annotations moved into the spec; nothing needed keeping.
  CHECK(canonical_at(beta, {"metadata", "annotations"}) == R"({"note":"kept"})");

  kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));
}

TEST_CASE("conversion: each v1beta1 field becomes its v1alpha1 annotation and back",
          "[myresource][conversion]") {
  struct Case {
    std::string spec_members;  // v1beta1
    std::string annotations;   // v1alpha1, canonical
    std::string alpha_canary;  // v1alpha1 spec.canary, canonical
  };
  auto [spec_members, annotations, alpha_canary] = GENERATE(values<Case>({
      {R"("canary":{"enabled":true})", R"({"myorg.io/canary":"true","note":"kept"})", "(absent)"},
      {R"("canary":{"enabled":false,"replicas":3})", R"({"myorg.io/canary":"false","note":"kept"})",
       R"({"replicas":3})"},
      {R"("canary":{"enabled":true,"targetVersion":"1.9.0"})",
       R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.9.0","note":"kept"})", "(absent)"},
      {R"("canary":{})", R"({"note":"kept"})", "{}"},
      {R"("features":{"orphanSweep":false,"canary":true})",
       R"({"myorg.io/features":"orphanSweep=false,canary=true","note":"kept"})", "(absent)"},
      {R"("features":{"orphanPolicy":"delete"})",
       R"({"myorg.io/features":"orphanPolicy=delete","note":"kept"})", "(absent)"},
      {R"("features":{})", R"({"myorg.io/features":"","note":"kept"})", "(absent)"},
  }));
  CAPTURE(spec_members);
  kube::Object beta = parse_json(beta_object(spec_members));
  kube::Object alpha = convert_to(beta.json(), kApiVersionV1alpha1);

  CHECK(alpha.view().api_version() == kApiVersionV1alpha1);
  CHECK(canonical_at(alpha, {"metadata", "annotations"}) == annotations);
  CHECK(canonical_at(alpha, {"spec", "canary"}) == alpha_canary);
  CHECK(canonical_at(alpha, {"spec", "features"}) == "(absent)");

  kube::Object back = convert_to(alpha.json(), kApiVersionV1beta1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(beta.json()));
}

TEST_CASE("conversion: odd v1alpha1 annotations keep their meaning in v1beta1 and come back verbatim",
          "[myresource][conversion]") {
  struct Case {
    std::string annotation;
    std::string value;
    std::string beta_path;  // "canary" or "features"
    std::string beta_value;
  };
  auto [annotation, value, beta_path, beta_value] = GENERATE(values<Case>({
      // v1alpha1 runs a canary for exactly "true" only.
      {"myorg.io/canary", "yes", "canary", R"({"enabled":false})"},
      {"myorg.io/canary", "TRUE", "canary", R"({"enabled":false})"},
      {"myorg.io/canary", "", "canary", R"({"enabled":false})"},
      // features.cpp trims and ignores case in values, skips bad entries, and the last entry of a name wins.
      {"myorg.io/features", " canary = FALSE ", "features", R"({"canary":false})"},
      {"myorg.io/features", "canary=false,canary=true", "features", R"({"canary":true})"},
      {"myorg.io/features", "orphanSweep=off,canary=false", "features", R"({"canary":false})"},
      {"myorg.io/features", "canary=false,", "features", R"({"canary":false})"},
      {"myorg.io/features", "nonsense", "features", "{}"},
      {"myorg.io/features", "colour=blue,orphanPolicy=Delete", "features", R"({"orphanPolicy":"delete"})"},
  }));
  CAPTURE(annotation, value);
  kube::Object alpha =
      parse_json(alpha_object("\"" + annotation + "\":" +
                              kube::to_json_string(rapidjson::Value(rapidjson::StringRef(value.c_str())))));
  kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);
  CHECK(canonical_at(beta, {"spec", beta_path}) == beta_value);

  kube::Object kept = kept_values(beta, kV1alpha1ValuesAnnotation);
  std::string pointer = "/metadata/annotations/" + annotation.substr(0, 8) + "~1" + annotation.substr(9);
  CHECK(canonical(kube::find_member(kept.json(), pointer)) ==
        "[" + kube::to_json_string(rapidjson::Value(rapidjson::StringRef(value.c_str()))) + "]");

  kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));
}

TEST_CASE("conversion: metadata, status and unknown fields are copied untouched",
          "[myresource][conversion]") {
  const std::string common_metadata =
      R"("name":"web","namespace":"team-a","uid":"u-1","resourceVersion":"42","generation":7,)"
      R"("creationTimestamp":"2026-12-01T10:00:00Z","labels":{"app.kubernetes.io/instance":"argo"},)"
      R"("finalizers":["myorg.io/finalizer"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u-o"}],)"
      R"("managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:spec":{}}}])";
  const std::string status =
      R"({"observedGeneration":7,"specHash":"abc","image":"app:1.0","replicas":2,"readyReplicas":1,)"
      R"("conditions":[{"type":"Ready","status":"False","reason":"RollingOut","message":"1/2",)"
      R"("observedGeneration":7,"lastTransitionTime":"2026-12-01T10:00:00Z"}]})";
  const std::string alpha_text =
      R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","extra":{"a":[1,2.5,null]},"metadata":{)" +
      common_metadata +
      R"(,"annotations":{"myorg.io/canary":"true","kubectl.kubernetes.io/last-applied-configuration":"{\"x\":1}"}},)"
      R"("spec":{"image":"app:1.0","replicas":0,"port":8080,"env":[{"name":"A","value":"1"}],"resources":{"limits":{"cpu":"1"}},)"
      R"("paused":true,"progressDeadlineSeconds":60,"automountServiceAccountToken":false,"future":{"x":true},)"
      R"("canary":{"replicas":4,"later":1}},"status":)" +
      status + "}";
  kube::Object alpha = parse_json(alpha_text);
  kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);

  for (std::string_view member : {"kind", "extra", "status"}) {
    CAPTURE(member);
    CHECK(canonical_at(beta, {member}) == canonical_at(alpha, {member}));
  }
  for (std::string_view member :
       {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels",
        "finalizers", "ownerReferences", "managedFields"}) {
    CAPTURE(member);
    CHECK(canonical_at(beta, {"metadata", member}) == canonical_at(alpha, {"metadata", member}));
  }
  CHECK(canonical_at(beta, {"metadata", "annotations"}) ==
        R"({"kubectl.kubernetes.io/last-applied-configuration":"{\"x\":1}"})");
  CHECK(canonical_at(beta, {"spec"}) ==
        R"({"automountServiceAccountToken":false,"canary":{"enabled":true,"later":1,"replicas":4},)"
        R"("env":[{"name":"A","value":"1"}],"future":{"x":true},"image":"app:1.0","paused":true,"port":8080,)"
        R"("progressDeadlineSeconds":60,"replicas":0,"resources":{"limits":{"cpu":"1"}}})");

  kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));
}

TEST_CASE("conversion: fields and annotations only one version has survive a round trip through the other",
          "[myresource][conversion]") {
  SECTION("v1alpha1 unknown fields named like v1beta1 fields") {
    kube::Object alpha =
        parse_json(alpha_object(R"("myorg.io/canary":"true","myorg.io/features":"canary=true")",
                                R"({"enabled":"maybe","targetVersion":7})"));
    alpha.set_member(member_at(alpha, {"spec"}), "features", parse_json(R"({"old":1})").json());
    kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(canonical_at(beta, {"spec", "canary"}) == R"({"enabled":true})");
    CHECK(canonical_at(beta, {"spec", "features"}) == R"({"canary":true})");
    CHECK(beta.view().annotation(kV1alpha1ValuesAnnotation).has_value());
    kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));
  }
  SECTION("v1alpha1 spec.canary {} next to the canary annotation") {
    kube::Object alpha = parse_json(alpha_object(R"("myorg.io/canary":"true")", "{}"));
    kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(canonical_at(beta, {"spec", "canary"}) == R"({"enabled":true})");
    kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));
  }
  SECTION("v1beta1 annotations named like the v1alpha1 ones") {
    // spec.canary sets enabled, so the canary annotation is ignored in v1beta1 (effective_canary.h);
    // myorg.io/features means nothing there.
    kube::Object beta =
        parse_json(beta_object(R"("canary":{"enabled":false},"features":{"canary":false})",
                               R"("myorg.io/canary":"true","myorg.io/features":"canary=true")"));
    kube::Object alpha = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK(alpha.view().annotation(kCanaryAnnotation) == "false");
    CHECK(alpha.view().annotation(kFeaturesAnnotation) == "canary=false");
    CHECK(canonical_at(kept_values(alpha, kV1beta1ValuesAnnotation),
                       {"/metadata/annotations/myorg.io~1canary"}) == R"(["true"])");
    kube::Object back = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(kube::canonical_json(back.json()) == kube::canonical_json(beta.json()));
  }
  SECTION("v1beta1 values of a type v1alpha1 cannot write") {
    kube::Object beta = parse_json(beta_object(
        R"("canary":{"enabled":"yes","targetVersion":5},"features":{"colour":"blue","canary":false})"));
    kube::Object alpha = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK_FALSE(alpha.view().annotation(kCanaryAnnotation).has_value());
    CHECK_FALSE(alpha.view().annotation(kTargetVersionAnnotation).has_value());
    CHECK(alpha.view().annotation(kFeaturesAnnotation) == "canary=false");
    kube::Object back = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(kube::canonical_json(back.json()) == kube::canonical_json(beta.json()));
  }
}

TEST_CASE("conversion: the canary annotations of a v1beta1 object are its canary in v1alpha1 too",
          "[myresource][conversion][effective_canary]") {
  struct Case {
    std::string spec_members;       // v1beta1
    std::string beta_annotations;   // v1beta1
    std::string alpha_annotations;  // v1alpha1, canonical, without the kept values
  };
  auto [spec_members, beta_annotations, alpha_annotations] = GENERATE(values<Case>({
      // kubectl annotate without a version: the annotations alone.
      {"", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
       R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.29","note":"kept"})"},
      {"", R"("myorg.io/canary":"yes")", R"({"myorg.io/canary":"yes","note":"kept"})"},
      // Field by field.
      {R"("canary":{"enabled":true})", R"("myorg.io/targetVersion":"1.29")",
       R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.29","note":"kept"})"},
      {R"("canary":{"targetVersion":"2.0","replicas":2})", R"("myorg.io/canary":"true")",
       R"({"myorg.io/canary":"true","myorg.io/targetVersion":"2.0","note":"kept"})"},
      // Both set: spec.canary wins; the ignored annotations wait in the kept values.
      {R"("canary":{"enabled":false,"targetVersion":"2.0"})",
       R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
       R"({"myorg.io/canary":"false","myorg.io/targetVersion":"2.0","note":"kept"})"},
      // A value v1alpha1 cannot write hides the annotation all the same.
      {R"("canary":{"enabled":"yes"})", R"("myorg.io/canary":"true")", R"({"note":"kept"})"},
  }));
  CAPTURE(spec_members, beta_annotations);
  kube::Object beta = parse_json(beta_object(spec_members, beta_annotations));
  kube::Object alpha = convert_to(beta.json(), kApiVersionV1alpha1);
  kube::Object without_kept = alpha.deep_copy();
  without_kept.erase_annotation(kV1beta1ValuesAnnotation);
  CHECK(canonical_at(without_kept, {"metadata", "annotations"}) == alpha_annotations);
  CHECK(canary_of(alpha) == canary_of(beta));

  kube::Object back = convert_to(alpha.json(), kApiVersionV1beta1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(beta.json()));
}

TEST_CASE("conversion: an annotated v1beta1 object changed in v1alpha1 keeps the change in v1beta1",
          "[myresource][conversion][effective_canary]") {
  kube::Object beta =
      parse_json(beta_object("", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")"));
  kube::Object alpha = convert_to(beta.json(), kApiVersionV1alpha1);

  SECTION("the canary annotation removed: no canary, the target stays an annotation") {
    alpha.erase_annotation(kCanaryAnnotation);
    kube::Object changed = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(canary_of(changed) == "off 1.29");
    CHECK(canonical_at(changed, {"metadata", "annotations"}) ==
          R"({"myorg.io/targetVersion":"1.29","note":"kept"})");
    CHECK(canonical_at(changed, {"spec", "canary"}) == "(absent)");
  }
  SECTION("another target") {
    alpha.set_annotation(kTargetVersionAnnotation, "1.30");
    kube::Object changed = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(canary_of(changed) == "on 1.30");
    CHECK(effective_canary(changed.json()).ignored.empty());
  }
  SECTION("the canary switched off") {
    alpha.set_annotation(kCanaryAnnotation, "false");
    kube::Object changed = convert_to(alpha.json(), kApiVersionV1beta1);
    CHECK(canary_of(changed) == "off 1.29");
    CHECK(effective_canary(changed.json()).ignored.empty());
  }
}

TEST_CASE("conversion: a kept value that the object no longer agrees with is dropped",
          "[myresource][conversion]") {
  kube::Object alpha =
      parse_json(alpha_object(R"("myorg.io/canary":"yes","myorg.io/features":"canary=FALSE")"));
  kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);
  REQUIRE(canonical_at(beta, {"spec", "features"}) == R"({"canary":false})");

  SECTION("an edit elsewhere keeps the original text") {
    beta.set_member(member_at(beta, {"spec"}), "replicas", kube::JsonValue(5));
    kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK(back.view().annotation(kFeaturesAnnotation) == "canary=FALSE");
    CHECK(back.view().annotation(kCanaryAnnotation) == "yes");
    CHECK(canonical_at(back, {"spec", "replicas"}) == "5");
  }
  SECTION("an edit of the converted field wins over the kept text") {
    beta.set_member(member_at(beta, {"spec", "features"}), "canary", kube::JsonValue(true));
    beta.set_member(member_at(beta, {"spec", "canary"}), "enabled", kube::JsonValue(true));
    kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
    CHECK(back.view().annotation(kFeaturesAnnotation) == "canary=true");
    CHECK(back.view().annotation(kCanaryAnnotation) == "true");
    CHECK_FALSE(back.view().annotation(kV1beta1ValuesAnnotation).has_value());
    CHECK_FALSE(back.view().annotation(kV1alpha1ValuesAnnotation).has_value());
  }
}

TEST_CASE("conversion: the reserved annotations set by hand are ordinary annotations",
          "[myresource][conversion]") {
  std::string value =
      GENERATE(as<std::string>{}, "not json", "{}", "[]", R"({\"/unknown\":[1]})", R"({\"/spec\":[1]})");
  CAPTURE(value);
  kube::Object alpha = parse_json(alpha_object("\"myorg.io/conversion-v1beta1\":\"" + value +
                                               "\",\"myorg.io/conversion-v1alpha1\":\"" + value + "\""));
  kube::Object beta = convert_to(alpha.json(), kApiVersionV1beta1);
  kube::Object back = convert_to(beta.json(), kApiVersionV1alpha1);
  CHECK(kube::canonical_json(back.json()) == kube::canonical_json(alpha.json()));

  kube::Object beta_by_hand =
      parse_json(beta_object("", "\"myorg.io/conversion-v1alpha1\":\"" + value + "\""));
  kube::Object alpha_of_it = convert_to(beta_by_hand.json(), kApiVersionV1alpha1);
  kube::Object beta_again = convert_to(alpha_of_it.json(), kApiVersionV1beta1);
  CHECK(kube::canonical_json(beta_again.json()) == kube::canonical_json(beta_by_hand.json()));
}

TEST_CASE("conversion: errors name the problem and nothing throws", "[myresource][conversion]") {
  struct Case {
    std::string object;
    std::string to;
    std::string expected;
  };
  auto [object, to, expected] = GENERATE(values<Case>({
      {alpha_object(""), "myorg.io/v2", "to apiVersion \"myorg.io/v2\""},
      {alpha_object(""), "v1beta1", "to apiVersion \"v1beta1\""},
      {R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{}})", "myorg.io/v1beta1",
       "apiVersion \"apps/v1\""},
      {R"({"kind":"MyResource","metadata":{}})", "myorg.io/v1beta1", "apiVersion \"\""},
      {R"([1,2])", "myorg.io/v1beta1", "not a JSON object"},
      {R"({"apiVersion":"myorg.io/v1alpha1","metadata":{"annotations":{"myorg.io/canary":true}}})",
       "myorg.io/v1beta1", "annotation myorg.io/canary is not a string"},
      {R"({"apiVersion":"myorg.io/v1beta1","metadata":{},"spec":"x"})", "myorg.io/v1alpha1",
       "spec is not an object"},
      {R"({"apiVersion":"myorg.io/v1beta1","metadata":{},"spec":{"canary":[]}})", "myorg.io/v1alpha1",
       "spec.canary is not an object"},
      {R"({"apiVersion":"myorg.io/v1beta1","spec":{}})", "myorg.io/v1alpha1", "metadata is missing"},
  }));
  CAPTURE(object, to);
  kube::Object input = parse_json(object);
  kube::Result<kube::Object> result = kube::make_error(kube::Reason::Unknown, "not run");
  REQUIRE_NOTHROW(result = convert_myresource(input.json(), to));
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().reason == kube::Reason::BadRequest);
  CHECK_THAT(result.error().message, Catch::Contains(expected));
}

TEST_CASE("conversion: an object already of the asked version is returned as it is",
          "[myresource][conversion]") {
  kube::Object alpha = parse_json(alpha_object(R"("myorg.io/canary":"yes")"));
  CHECK(kube::canonical_json(convert_to(alpha.json(), kApiVersionV1alpha1).json()) ==
        kube::canonical_json(alpha.json()));
  kube::Object beta = parse_json(beta_object(R"("features":{"canary":false})"));
  CHECK(kube::canonical_json(convert_to(beta.json(), kApiVersionV1beta1).json()) ==
        kube::canonical_json(beta.json()));
}

namespace {

// Random MyResources of either version, valid for their CRD version, with the odd but valid
// annotation values users write (which the admission policy would refuse only on new writes).
class RandomMyResource {
 public:
  explicit RandomMyResource(std::uint32_t seed) : random_(seed) {}

  kube::Object alpha() { return object(false); }
  kube::Object beta() { return object(true); }

 private:
  bool chance(int percent) { return std::uniform_int_distribution<int>(0, 99)(random_) < percent; }
  int number(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }
  std::string pick(const std::vector<std::string>& choices) {
    return choices[static_cast<std::size_t>(number(0, static_cast<int>(choices.size()) - 1))];
  }

  std::string canary_annotation() { return pick({"true", "false", "yes", "TRUE", "", " true", "False"}); }
  std::string target_version() { return pick({"1.8.0", "v2", "2.0.0-rc.1", "latest", "", "not a tag!"}); }
  std::string features_text() {
    std::string text;
    int entries = number(0, 4);
    for (int index = 0; index < entries; ++index) {
      if (index > 0) text += pick({",", ", ", " ,"});
      text += pick({"canary=true", "canary=false", "orphanSweep=false", "orphanSweep=true",
                    "orphanPolicy=delete", "orphanPolicy=report", " canary = FALSE ", "orphanPolicy=Delete",
                    "colour=blue", "nonsense", "", "canary=maybe", "orphanSweep", "=true", "Canary=false"});
    }
    if (chance(10)) text += ",";
    return text;
  }
  // Values of the reserved annotations that are not kept values as the conversion writes them.
  std::string hand_written_kept_values() { return pick({"not json", "{}", "[]", R"({"/unknown":[1]})", ""}); }

  void annotate(kube::Object& object, kube::JsonValue& annotations, std::string_view key,
                const std::string& value) {
    object.set_string_member(annotations, key, value);
  }

  kube::Object object(bool beta) {
    kube::Object object;
    auto& root = object.json();
    object.set_string_member(root, "apiVersion", beta ? kApiVersionV1beta1 : kApiVersionV1alpha1);
    object.set_string_member(root, "kind", "MyResource");
    object.set_name("web-" + std::to_string(number(0, 99)));
    object.set_namespace_name("team-a");
    object.set_string_member(*kube::find_member(root, "metadata"), "uid",
                             "uid-" + std::to_string(number(0, 9999)));
    object.set_resource_version(std::to_string(number(1, 100000)));
    if (chance(50)) object.set_label("team", pick({"a", "b"}));
    if (chance(30)) object.add_finalizer(kFinalizer);

    kube::JsonValue annotations(rapidjson::kObjectType);
    kube::Object scratch;
    auto add = [&](std::string_view key, const std::string& value) {
      kube::JsonValue text(value.c_str(), static_cast<rapidjson::SizeType>(value.size()),
                           scratch.allocator());
      scratch.set_member(annotations, key, text);
    };
    if (beta) {
      // Plain annotations in v1beta1: named like the v1alpha1 ones, they mean nothing there.
      if (chance(10)) add(kCanaryAnnotation, canary_annotation());
      if (chance(10)) add(kTargetVersionAnnotation, target_version());
      if (chance(10)) add(kFeaturesAnnotation, features_text());
      if (chance(5)) add(kV1beta1ValuesAnnotation, pick({"not json", R"({"/spec":[]})", "x"}));
      if (chance(5)) add(kV1alpha1ValuesAnnotation, hand_written_kept_values());
    } else {
      if (chance(50)) add(kCanaryAnnotation, canary_annotation());
      if (chance(50)) add(kTargetVersionAnnotation, target_version());
      if (chance(50)) add(kFeaturesAnnotation, features_text());
      if (chance(5)) add(kV1alpha1ValuesAnnotation, pick({"not json", R"({"/spec":[]})", "x"}));
      if (chance(5)) add(kV1beta1ValuesAnnotation, hand_written_kept_values());
    }
    if (chance(40)) add("note", pick({"", "ünïcode ✓", R"({"a":1})", "line\nbreak"}));
    if (chance(20)) add("kubectl.kubernetes.io/last-applied-configuration", R"({"spec":{"image":"app:1"}})");
    if (!annotations.ObjectEmpty())
      object.set_member(*kube::find_member(root, "metadata"), "annotations", annotations);

    kube::JsonValue spec(rapidjson::kObjectType);
    auto set = [&](kube::JsonValue& parent, std::string_view key, const std::string& json) {
      scratch.set_member(parent, key, parse_json(json).json());
    };
    set(spec, "image",
        R"(")" + pick({"app:1.0", "reg:5000/team/app:2.1", "app@sha256:0123456789abcdef0123456789abcdef"}) +
            R"(")");
    if (chance(70)) set(spec, "replicas", std::to_string(number(0, 1000)));
    if (chance(30)) set(spec, "port", std::to_string(number(1, 65535)));
    if (chance(30)) set(spec, "env", R"([{"name":"A","value":"1"},{"name":"B"}])");
    if (chance(20)) set(spec, "resources", R"({"requests":{"cpu":"100m","memory":128}})");
    if (chance(20)) set(spec, "paused", chance(50) ? "true" : "false");
    if (chance(20)) set(spec, "progressDeadlineSeconds", std::to_string(number(1, 86400)));
    if (chance(20)) set(spec, "automountServiceAccountToken", chance(50) ? "true" : "false");
    if (chance(5)) set(spec, "future", R"({"x":[1,"two",null]})");
    if (chance(50)) {
      kube::JsonValue canary(rapidjson::kObjectType);
      if (chance(50)) set(canary, "replicas", std::to_string(number(1, 1000)));
      if (chance(50)) set(canary, "progressDeadlineSeconds", std::to_string(number(1, 86400)));
      if (beta) {
        if (chance(50)) set(canary, "enabled", chance(50) ? "true" : "false");
        if (chance(40)) set(canary, "targetVersion", "\"" + pick({"1.8.0", "v2", "2.0.0-rc.1"}) + "\"");
      } else if (chance(3)) {
        set(canary, "enabled",
            R"("an unknown field in v1alpha1")");  // kept by the API server only without pruning
      }
      scratch.set_member(spec, "canary", canary);
    }
    if (beta && chance(50)) {
      kube::JsonValue features(rapidjson::kObjectType);
      std::vector<std::string> names = {"canary", "orphanSweep", "orphanPolicy"};
      std::shuffle(names.begin(), names.end(), random_);
      for (const std::string& name : names) {
        if (!chance(50)) continue;
        set(features, name,
            name == "orphanPolicy" ? (chance(50) ? R"("delete")" : R"("report")")
                                   : (chance(50) ? "true" : "false"));
      }
      scratch.set_member(spec, "features", features);
    } else if (!beta && chance(3)) {
      set(spec, "features", R"({"an unknown field in v1alpha1":true})");
    }
    object.set_member(root, "spec", spec);

    if (chance(60)) {
      object.set_member(
          root, "status",
          parse_json(R"({"observedGeneration":)" + std::to_string(number(0, 9)) +
                     R"(,"replicaSummary":"1/2","conditions":[{"type":"Ready","status":"True",)"
                     R"("reason":"Available","message":"","lastTransitionTime":"2026-12-01T10:00:00Z"}]})")
              .json());
    }
    if (chance(5)) object.set_member(root, "extra", parse_json(R"({"kept":true})").json());
    return object;
  }

  std::mt19937 random_;
};

std::uint32_t base_seed() {
  const char* text = std::getenv("MYOP_CONVERSION_SEED");
  return text == nullptr ? 20u : static_cast<std::uint32_t>(std::strtoul(text, nullptr, 10));
}

// `object` converted to `to`, after requiring that converting that back to `back_to` (the object's own
// version) gives `object` unchanged; counts in `kept` the conversions that needed `kept_annotation`.
std::optional<kube::Object> round_trip(const kube::Object& object, std::string_view to,
                                       std::string_view back_to, std::string_view kept_annotation,
                                       int& kept) {
  auto converted = convert_myresource(object.json(), to);
  REQUIRE(converted.ok());
  INFO(to << ": " << kube::canonical_json(converted->json()));
  if (converted->view().annotation(kept_annotation)) ++kept;
  auto back = convert_myresource(converted->json(), back_to);
  REQUIRE(back.ok());
  REQUIRE(kube::canonical_json(back->json()) == kube::canonical_json(object.json()));
  return std::move(*converted);
}

// What the operator makes of the v1alpha1 canary annotation: a canary runs for exactly "true".
bool runs_canary(std::optional<std::string_view> annotation) { return annotation == "true"; }

}  // namespace

TEST_CASE("conversion: random objects survive v1alpha1 -> v1beta1 -> v1alpha1 and keep their meaning",
          "[myresource][conversion][property]") {
  const std::uint32_t first = base_seed();
  int with_kept_values = 0;
  for (std::uint32_t seed = first; seed < first + 2000; ++seed) {
    kube::Object alpha = RandomMyResource(seed).alpha();
    INFO("seed " << seed << " (MYOP_CONVERSION_SEED=" << seed
                 << " reproduces it first)\nv1alpha1: " << kube::canonical_json(alpha.json()));
    auto beta = round_trip(alpha, kApiVersionV1beta1, kApiVersionV1alpha1, kV1alpha1ValuesAnnotation,
                           with_kept_values);
    INFO("v1beta1: " << kube::canonical_json(beta->json()));

    // The v1beta1 object means what the v1alpha1 one meant.
    REQUIRE(canary_of(alpha) == canary_of(*beta));
    const kube::JsonValue* enabled = beta->view().find({"spec", "canary", "enabled"});
    REQUIRE(runs_canary(alpha.view().annotation(kCanaryAnnotation)) ==
            (enabled != nullptr && enabled->IsTrue()));
    std::optional<std::string_view> target = alpha.view().annotation(kTargetVersionAnnotation);
    const kube::JsonValue* beta_target = beta->view().find({"spec", "canary", "targetVersion"});
    REQUIRE(target.has_value() == (beta_target != nullptr));
    if (target) REQUIRE(*target == beta_target->GetString());
    std::optional<std::string_view> features = alpha.view().annotation(kFeaturesAnnotation);
    const kube::JsonValue* beta_features = beta->view().find({"spec", "features"});
    REQUIRE(features.has_value() == (beta_features != nullptr));
    if (features) {
      for (const Features& base : {Features{}, Features{false, false, OrphanPolicy::Delete}}) {
        REQUIRE(apply_feature_overrides(base, *features).features ==
                apply_feature_overrides(base, features_annotation(*beta_features)).features);
      }
    }
    // Annotations that mean something in v1alpha1 only are gone from the v1beta1 object.
    for (std::string_view key : {kCanaryAnnotation, kTargetVersionAnnotation, kFeaturesAnnotation}) {
      REQUIRE_FALSE(beta->view().annotation(key).has_value());
    }
    REQUIRE(canonical_at(*beta, {"status"}) == canonical_at(alpha, {"status"}));
  }
  // The generator reaches the values that need keeping often enough to matter.
  CHECK(with_kept_values > 200);
}

TEST_CASE("conversion: random objects survive v1beta1 -> v1alpha1 -> v1beta1 and keep their meaning",
          "[myresource][conversion][property]") {
  const std::uint32_t first = base_seed();
  int with_kept_values = 0;
  for (std::uint32_t seed = first; seed < first + 2000; ++seed) {
    kube::Object beta = RandomMyResource(seed).beta();
    INFO("seed " << seed << " (MYOP_CONVERSION_SEED=" << seed
                 << " reproduces it first)\nv1beta1: " << kube::canonical_json(beta.json()));
    auto alpha =
        round_trip(beta, kApiVersionV1alpha1, kApiVersionV1beta1, kV1beta1ValuesAnnotation, with_kept_values);
    INFO("v1alpha1: " << kube::canonical_json(alpha->json()));

    // The v1alpha1 annotations say the v1beta1 object's effective canary: spec.canary where it sets a
    // field, the v1beta1 annotation where it does not.
    REQUIRE(canary_of(beta) == canary_of(*alpha));
    const kube::JsonValue* beta_features = beta.view().find({"spec", "features"});
    std::optional<std::string_view> features = alpha->view().annotation(kFeaturesAnnotation);
    REQUIRE(features.has_value() == (beta_features != nullptr));
    if (features) REQUIRE(*features == features_annotation(*beta_features));
    REQUIRE(canonical_at(*alpha, {"status"}) == canonical_at(beta, {"status"}));
  }
  CHECK(with_kept_values > 100);
}

namespace {

// Canonical JSON of a v1beta1 object without its kept v1alpha1 values (and the annotations map they leave
// empty).
std::string without_kept_values(const kube::Object& beta) {
  kube::Object copy = beta.deep_copy();
  copy.erase_annotation(kV1alpha1ValuesAnnotation);
  kube::JsonValue& metadata = member_at(copy, {"metadata"});
  const kube::JsonValue* annotations = kube::find_member(metadata, "annotations");
  if (annotations != nullptr && annotations->ObjectEmpty()) metadata.EraseMember("annotations");
  return kube::canonical_json(copy.json());
}

// A user's edit of an object read as v1beta1: the moved fields set, changed or removed.
void edit_moved_fields(kube::Object& beta, std::mt19937& random) {
  auto chance = [&](int percent) { return std::uniform_int_distribution<int>(0, 99)(random) < percent; };
  kube::JsonValue& spec = member_at(beta, {"spec"});
  if (chance(50)) {
    if (kube::find_member(spec, "canary") == nullptr)
      beta.set_member(spec, "canary", parse_json("{}").json());
    kube::JsonValue& canary = member_at(beta, {"spec", "canary"});
    if (chance(70)) {
      beta.set_member(canary, "enabled", kube::JsonValue(chance(50)));
    } else {
      canary.EraseMember("enabled");
    }
    if (chance(50)) beta.set_string_member(canary, "targetVersion", chance(50) ? "3.0.0" : "1.8.0");
  }
  if (chance(50)) {
    if (chance(20)) {
      spec.EraseMember("features");
    } else {
      std::string features = "{";
      if (chance(50)) features += std::string(R"("canary":)") + (chance(50) ? "true" : "false");
      if (chance(50)) features += std::string(features.size() > 1 ? "," : "") + R"("orphanPolicy":"delete")";
      beta.set_member(spec, "features", parse_json(features + "}").json());
    }
  }
  if (chance(30)) beta.set_member(spec, "replicas", kube::JsonValue(7));
}

}  // namespace

TEST_CASE("conversion: after an edit in v1beta1 the v1alpha1 object means what the edited one says",
          "[myresource][conversion][property]") {
  const std::uint32_t first = base_seed();
  for (std::uint32_t seed = first; seed < first + 2000; ++seed) {
    kube::Object alpha = RandomMyResource(seed).alpha();
    INFO("seed " << seed << " (MYOP_CONVERSION_SEED=" << seed
                 << " reproduces it first)\nv1alpha1: " << kube::canonical_json(alpha.json()));
    auto beta = convert_myresource(alpha.json(), kApiVersionV1beta1);
    REQUIRE(beta.ok());
    std::mt19937 random(seed);
    edit_moved_fields(*beta, random);
    INFO("edited v1beta1: " << kube::canonical_json(beta->json()));
    auto edited = convert_myresource(beta->json(), kApiVersionV1alpha1);
    REQUIRE(edited.ok());
    INFO("v1alpha1 of it: " << kube::canonical_json(edited->json()));

    REQUIRE(canary_of(*beta) == canary_of(*edited));
    const kube::JsonValue* features = beta->view().find({"spec", "features"});
    std::optional<std::string_view> alpha_features = edited->view().annotation(kFeaturesAnnotation);
    REQUIRE(alpha_features.has_value() == (features != nullptr));
    if (features) {
      for (const Features& base : {Features{}, Features{false, false, OrphanPolicy::Delete}}) {
        REQUIRE(apply_feature_overrides(base, *alpha_features).features ==
                apply_feature_overrides(base, features_annotation(*features)).features);
      }
    }
    REQUIRE(canonical_at(*edited, {"spec", "replicas"}) == canonical_at(*beta, {"spec", "replicas"}));
    // And the edited object comes back as it was edited, but for kept values that no longer apply.
    auto again = convert_myresource(edited->json(), kApiVersionV1beta1);
    REQUIRE(again.ok());
    REQUIRE(without_kept_values(*again) == without_kept_values(*beta));
  }
}
