// The effective canary (src/myresource/effective_canary.h): spec.canary wins field by field, the
// annotations supply what it leaves unset, on every served version; what is ignored is reported.
#include "myresource/effective_canary.h"

#include <catch2/catch.hpp>
#include <string>

#include "fixtures.h"
#include "myresource/types.h"

using namespace myop;
using namespace myop::myresource;
using myop::myresource::testing::parse_json;

namespace {

kube::Object object_of(const std::string& api_version, const std::string& annotations,
                       const std::string& canary) {
  return parse_json(R"({"apiVersion":")" + api_version +
                    R"(","kind":"MyResource","metadata":{"name":"web","annotations":{)" + annotations +
                    R"(}},"spec":{"image":"app:1.0")" + (canary.empty() ? "" : R"(,"canary":)" + canary) +
                    "}}");
}

std::string describe(const EffectiveCanary& canary) {
  return std::string(canary.enabled ? "on" : "off") + " " + canary.target.value_or("(none)");
}

}  // namespace

TEST_CASE("effective canary: spec.canary wins field by field, the annotations fill what it leaves unset",
          "[myresource][effective_canary]") {
  struct Case {
    std::string annotations;
    std::string canary;  // v1beta1 spec.canary
    std::string expected;
    CanarySource enabled_source;
    CanarySource target_source;
  };
  auto [annotations, canary, expected, enabled_source, target_source] = GENERATE(values<Case>({
      // Nothing set: no canary.
      {"", "", "off (none)", CanarySource::Unset, CanarySource::Unset},
      {"", R"({"replicas":2})", "off (none)", CanarySource::Unset, CanarySource::Unset},
      // The annotations alone (kubectl annotate without naming a version writes them on v1beta1).
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")", "", "on 1.29", CanarySource::Annotation,
       CanarySource::Annotation},
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")", R"({"replicas":2})", "on 1.29",
       CanarySource::Annotation, CanarySource::Annotation},
      // As in v1alpha1, anything but exactly "true" runs no canary.
      {R"("myorg.io/canary":"yes")", "", "off (none)", CanarySource::Annotation, CanarySource::Unset},
      {R"("myorg.io/canary":"false","myorg.io/targetVersion":"1.29")", "", "off 1.29",
       CanarySource::Annotation, CanarySource::Annotation},
      // The spec alone.
      {"", R"({"enabled":true,"targetVersion":"2.0"})", "on 2.0", CanarySource::Spec, CanarySource::Spec},
      // Field by field: each field from where it is set.
      {R"("myorg.io/targetVersion":"1.29")", R"({"enabled":true})", "on 1.29", CanarySource::Spec,
       CanarySource::Annotation},
      {R"("myorg.io/canary":"true")", R"({"targetVersion":"2.0"})", "on 2.0", CanarySource::Annotation,
       CanarySource::Spec},
      // Both set: the spec wins.
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
       R"({"enabled":false,"targetVersion":"2.0"})", "off 2.0", CanarySource::Spec, CanarySource::Spec},
      {R"("myorg.io/canary":"false")", R"({"enabled":true,"targetVersion":"2.0"})", "on 2.0",
       CanarySource::Spec, CanarySource::Spec},
      // null is unset (the API server drops it; a client may send it).
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
       R"({"enabled":null,"targetVersion":null})", "on 1.29", CanarySource::Annotation,
       CanarySource::Annotation},
      // A value of the wrong type is set (parse_myresource reports it) and hides the annotation.
      {R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
       R"({"enabled":"yes","targetVersion":5})", "off (none)", CanarySource::Spec, CanarySource::Spec},
  }));
  CAPTURE(annotations, canary);
  const EffectiveCanary effective =
      effective_canary(object_of("myorg.io/v1beta1", annotations, canary).json());
  CHECK(describe(effective) == expected);
  CHECK(effective.enabled_source == enabled_source);
  CHECK(effective.target_source == target_source);
}

TEST_CASE("effective canary: v1alpha1 reads the annotations only", "[myresource][effective_canary]") {
  // spec.canary.enabled is no v1alpha1 field: an unknown member of that name is not a setting.
  const EffectiveCanary effective = effective_canary(
      object_of("myorg.io/v1alpha1", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
                R"({"enabled":false,"targetVersion":"2.0"})")
          .json());
  CHECK(describe(effective) == "on 1.29");
  CHECK(effective.ignored.empty());
  CHECK(describe(effective_canary(object_of("myorg.io/v1alpha1", "", R"({"enabled":true})").json())) ==
        "off (none)");
}

TEST_CASE("effective canary: an annotation the spec overrides with another value is reported as ignored",
          "[myresource][effective_canary]") {
  SECTION("both disagree") {
    const EffectiveCanary effective = effective_canary(
        object_of("myorg.io/v1beta1", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
                  R"({"enabled":false,"targetVersion":"2.0"})")
            .json());
    REQUIRE(effective.ignored.size() == 2);
    CHECK(effective.ignored[0] ==
          IgnoredAnnotation{"myorg.io/canary", "true", "spec.canary.enabled", "false"});
    CHECK(effective.ignored[1] ==
          IgnoredAnnotation{"myorg.io/targetVersion", "1.29", "spec.canary.targetVersion", R"("2.0")"});
    CHECK(
        effective.ignored[0].message() ==
        R"(annotation myorg.io/canary "true" is ignored: spec.canary.enabled is false, and spec.canary wins )"
        R"(over the annotations; remove the annotation, or change spec.canary.enabled)");
  }
  SECTION("an annotation that says what the field says is not reported") {
    // "yes" runs no canary, as enabled: false.
    const EffectiveCanary effective = effective_canary(
        object_of("myorg.io/v1beta1", R"("myorg.io/canary":"yes","myorg.io/targetVersion":"2.0")",
                  R"({"enabled":false,"targetVersion":"2.0"})")
            .json());
    CHECK(effective.ignored.empty());
  }
  SECTION("an annotation the spec leaves to it is not ignored") {
    const EffectiveCanary effective = effective_canary(
        object_of("myorg.io/v1beta1", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")", "{}")
            .json());
    CHECK(effective.ignored.empty());
  }
}

TEST_CASE("effective canary: odd shapes read as absent, nothing throws", "[myresource][effective_canary]") {
  for (
      const char* text :
      {"[1]", "{}", R"({"apiVersion":"myorg.io/v1beta1","metadata":[],"spec":"x"})",
       R"({"apiVersion":"myorg.io/v1beta1","metadata":{"annotations":{"myorg.io/canary":true}},"spec":{"canary":[]}})"}) {
    CAPTURE(text);
    EffectiveCanary effective;
    REQUIRE_NOTHROW(effective = effective_canary(parse_json(text).json()));
    CHECK(describe(effective) == "off (none)");
  }
}

TEST_CASE("parse_myresource runs the effective canary of a v1beta1 object and lists what it ignores",
          "[myresource][effective_canary][types]") {
  const ParsedMyResource annotated = parse_myresource(
      object_of("myorg.io/v1beta1", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")", "")
          .json());
  CHECK(annotated.valid());
  CHECK(annotated.resource.spec.canary.enabled);
  CHECK(annotated.resource.spec.canary.target_version == "1.29");
  CHECK(annotated.ignored_annotations.empty());

  const ParsedMyResource overridden = parse_myresource(
      object_of("myorg.io/v1beta1", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.29")",
                R"({"enabled":false})")
          .json());
  CHECK_FALSE(overridden.resource.spec.canary.enabled);
  CHECK(overridden.resource.spec.canary.target_version == "1.29");
  REQUIRE(overridden.ignored_annotations.size() == 1);
  CHECK(overridden.ignored_annotations[0].annotation == "myorg.io/canary");
}

TEST_CASE("parse_myresource lists myorg.io/features written on a v1beta1 object as ignored, not on v1alpha1",
          "[myresource][effective_canary][types]") {
  const ParsedMyResource beta =
      parse_myresource(object_of("myorg.io/v1beta1", R"("myorg.io/features":"canary=false")", "").json());
  CHECK(beta.valid());
  CHECK_FALSE(beta.resource.spec.features.canary.has_value());  // it means nothing there
  REQUIRE(beta.ignored_annotations.size() == 1);
  CHECK(beta.ignored_annotations[0] ==
        IgnoredAnnotation{"myorg.io/features", "canary=false", "spec.features", "unset"});
  CHECK(beta.ignored_annotations[0].message() ==
        R"(annotation myorg.io/features "canary=false" is ignored: it means nothing on myorg.io/v1beta1, )"
        R"(where spec.features is the only form (now unset); remove the annotation, and set spec.features )"
        R"(instead)");

  // Read as v1alpha1 it does not appear either: both versions say it does nothing.
  auto as_alpha = convert_myresource(
      object_of("myorg.io/v1beta1", R"("myorg.io/features":"canary=false")", "").json(), "myorg.io/v1alpha1");
  REQUIRE(as_alpha);
  CHECK_FALSE(kube::ObjectView(as_alpha->json()).annotation("myorg.io/features"));

  // On v1alpha1 it is the form of spec.features: applied, not ignored.
  const ParsedMyResource alpha =
      parse_myresource(object_of("myorg.io/v1alpha1", R"("myorg.io/features":"canary=false")", "").json());
  CHECK(alpha.ignored_annotations.empty());
  REQUIRE(alpha.resource.spec.features.canary.has_value());
  CHECK_FALSE(*alpha.resource.spec.features.canary);
}
