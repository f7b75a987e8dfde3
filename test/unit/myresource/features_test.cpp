#include "myresource/features.h"

#include <catch2/catch.hpp>
#include <string>

#include "myresource/conversion.h"
#include "myresource/types.h"

using namespace myop::myresource;

TEST_CASE("defaults: canary on, orphan sweep on, orphans reported", "[myresource][features]") {
  Features features;
  CHECK(features.canary);
  CHECK(features.orphan_sweep);
  CHECK(features.orphan_policy == OrphanPolicy::Report);
  auto parsed = features_from_config_map({});
  CHECK(parsed.ok());
  CHECK(parsed.features == Features{});
}

TEST_CASE("features_from_config_map reads every flag", "[myresource][features]") {
  auto parsed =
      features_from_config_map({{"canary", "false"}, {"orphanSweep", " FALSE "}, {"orphanPolicy", "Delete"}});
  CHECK(parsed.ok());
  CHECK_FALSE(parsed.features.canary);
  CHECK_FALSE(parsed.features.orphan_sweep);
  CHECK(parsed.features.orphan_policy == OrphanPolicy::Delete);
}

TEST_CASE("bad ConfigMap values keep the previous value and say why", "[myresource][features]") {
  struct Case {
    std::string key;
    std::string value;
    std::string expected_error;
  };
  auto [key, value, expected_error] = GENERATE(values<Case>({
      {"canary", "yes", "is not a boolean: use true or false"},
      {"orphanSweep", "", "is not a boolean"},
      {"orphanPolicy", "purge", "use delete or report"},
      {"orphansweep", "false", "unknown feature flag \"orphansweep\""},
  }));
  CAPTURE(key, value);
  Features previous;
  previous.canary = false;
  previous.orphan_policy = OrphanPolicy::Delete;
  auto parsed = features_from_config_map({{key, value}}, previous);
  REQUIRE(parsed.errors.size() == 1);
  CHECK_THAT(parsed.errors[0], Catch::Contains(expected_error));
  CHECK(parsed.features == previous);
}

TEST_CASE("one bad key does not stop the good ones", "[myresource][features]") {
  auto parsed = features_from_config_map({{"canary", "false"}, {"orphanPolicy", "nope"}});
  CHECK(parsed.errors.size() == 1);
  CHECK_FALSE(parsed.features.canary);
  CHECK(parsed.features.orphan_policy == OrphanPolicy::Report);
}

TEST_CASE("apply_feature_overrides applies the annotation on top of the ConfigMap",
          "[myresource][features]") {
  Features base;
  base.orphan_policy = OrphanPolicy::Delete;
  struct Case {
    std::string annotation;
    bool canary;
    bool orphan_sweep;
    OrphanPolicy policy;
  };
  auto [annotation, canary, orphan_sweep, policy] = GENERATE(values<Case>({
      {"", true, true, OrphanPolicy::Delete},
      {"orphanSweep=false", true, false, OrphanPolicy::Delete},
      {" canary = false , orphanPolicy=report ", false, true, OrphanPolicy::Report},
      {"canary=false,", false, true, OrphanPolicy::Delete},
      {"canary=false,canary=true", true, true, OrphanPolicy::Delete},  // the last one wins
  }));
  CAPTURE(annotation);
  auto parsed = apply_feature_overrides(base, annotation);
  CHECK(parsed.ok());
  CHECK(parsed.features.canary == canary);
  CHECK(parsed.features.orphan_sweep == orphan_sweep);
  CHECK(parsed.features.orphan_policy == policy);
}

TEST_CASE("bad annotation items are reported, good ones applied", "[myresource][features]") {
  auto parsed = apply_feature_overrides(Features{}, "orphanSweep=false,canary,colour=blue,canary=maybe");
  CHECK_FALSE(parsed.features.orphan_sweep);
  CHECK(parsed.features.canary);
  REQUIRE(parsed.errors.size() == 3);
  CHECK_THAT(parsed.errors[0], Catch::Contains("\"canary\" is not name=value"));
  CHECK_THAT(parsed.errors[1], Catch::Contains("unknown feature flag \"colour\""));
  CHECK_THAT(parsed.errors[2], Catch::Contains("annotation myorg.io/features"));
}

TEST_CASE("features_from_config_map_object reads the ConfigMap's data", "[myresource][features]") {
  auto config_map = myop::kube::Object::parse(
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"my-operator-config"},
          "data":{"orphanPolicy":"delete","canary":"false"}})");
  REQUIRE(config_map.ok());
  auto parsed = features_from_config_map_object(&config_map->json());
  CHECK(parsed.ok());
  CHECK_FALSE(parsed.features.canary);
  CHECK(parsed.features.orphan_policy == OrphanPolicy::Delete);
  CHECK(features_from_config_map_object(nullptr).features == Features{});
}

TEST_CASE("a changed ConfigMap: a bad value keeps the last good one, an absent key goes back to its default",
          "[myresource][features]") {
  Features previous;
  previous.canary = false;
  previous.orphan_sweep = false;
  previous.orphan_policy = OrphanPolicy::Delete;
  auto config_map = myop::kube::Object::parse(
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"my-operator-config"},
          "data":{"canary":"flase","orphanPolicy":"report"}})");
  REQUIRE(config_map.ok());
  auto parsed = features_from_changed_config_map(&config_map->json(), previous);
  REQUIRE(parsed.errors.size() == 1);
  CHECK(parsed.errors[0].find("flase") != std::string::npos);
  CHECK_FALSE(parsed.features.canary);  // bad value: the last good one (false), not the default
  CHECK(parsed.features.orphan_sweep);  // absent: the built-in default
  CHECK(parsed.features.orphan_policy == OrphanPolicy::Report);  // good value: taken

  // No ConfigMap at all: every flag at its default, whatever came before.
  CHECK(features_from_changed_config_map(nullptr, previous).features == Features{});
}

TEST_CASE("spec.features overrides set only the flags they name", "[myresource][features]") {
  Features base{false, false, OrphanPolicy::Delete};
  CHECK(with_overrides(base, FeatureOverrides{}) == base);
  FeatureOverrides overrides;
  overrides.canary = true;
  CHECK(with_overrides(base, overrides) == Features{true, false, OrphanPolicy::Delete});
  overrides.orphan_sweep = true;
  overrides.orphan_policy = OrphanPolicy::Report;
  CHECK(with_overrides(base, overrides) == Features{});
}

TEST_CASE("spec.features decides as the myorg.io/features text it was converted from",
          "[myresource][features]") {
  const std::string text = GENERATE(as<std::string>{}, "", "canary=false", "orphanPolicy=delete,canary=true",
                                    " canary = FALSE ,orphanSweep=false", "canary=maybe,orphanSweep=false",
                                    "colour=red,canary=false,canary=true");
  CAPTURE(text);
  auto parsed = myop::kube::Object::parse(
      R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web"},"spec":{"image":"a:1"}})");
  REQUIRE(parsed.ok());
  myop::kube::Object object = std::move(parsed).value();
  object.set_member(object.json()["spec"], "features", features_from_annotation(text).json());
  const FeatureOverrides overrides = parse_myresource(object.json()).resource.spec.features;
  for (const Features& base : {Features{}, Features{false, false, OrphanPolicy::Delete}}) {
    CHECK(with_overrides(base, overrides) == apply_feature_overrides(base, text).features);
  }
}
