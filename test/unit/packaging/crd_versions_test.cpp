// The versions of the MyResource CRD agree with docs/versioning.md and with the conversion
// (src/myresource/conversion.h): v1beta1 is v1alpha1 plus the fields the annotations moved into,
// and no version whose schema differs is served without the conversion webhook.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "myresource/features.h"
#include "packaging_files.h"

using namespace myop::packaging;

namespace {

YAML::Node crd() {
  return YAML::LoadFile((repository_root() / "config/crd/myorg.io_myresources.yaml").string());
}

YAML::Node version(const YAML::Node& definition, const std::string& name) {
  for (const YAML::Node& candidate : definition["spec"]["versions"]) {
    if (candidate["name"].as<std::string>() == name) return candidate;
  }
  FAIL("the CRD has no version " << name);
  return {};
}

std::set<std::string> keys(const YAML::Node& map) {
  std::set<std::string> names;
  for (const auto& entry : map) names.insert(entry.first.as<std::string>());
  return names;
}

YAML::Node spec_properties(const YAML::Node& crd_version) {
  return crd_version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
}

std::string dump(const YAML::Node& node) {
  YAML::Emitter emitter;
  emitter << node;
  return emitter.c_str();
}

}  // namespace

TEST_CASE("packaging: v1beta1 is the one storage version, both versions are served, converted by the webhook",
          "[packaging][crd]") {
  YAML::Node definition = crd();
  std::set<std::string> stored;
  for (const YAML::Node& candidate : definition["spec"]["versions"]) {
    if (candidate["storage"].as<bool>()) stored.insert(candidate["name"].as<std::string>());
  }
  CHECK(stored == std::set<std::string>{"v1beta1"});
  CHECK(version(definition, "v1alpha1")["served"].as<bool>());
  CHECK(version(definition, "v1beta1")["served"].as<bool>());
  // With strategy None the API server only rewrites apiVersion: v1alpha1's schema would prune the
  // fields v1beta1 moved into the spec.
  const YAML::Node conversion = definition["spec"]["conversion"];
  REQUIRE(conversion);
  CHECK(conversion["strategy"].as<std::string>("") == "Webhook");
  CHECK(dump(conversion["webhook"]["conversionReviewVersions"]) == "[v1]");
  // The Service of config/default; the chart sets its release's (templates/crds.yaml).
  const YAML::Node service = conversion["webhook"]["clientConfig"]["service"];
  CHECK(service["namespace"].as<std::string>("") == "my-operator-system");
  CHECK(service["name"].as<std::string>("") == "my-operator-webhook");
  CHECK(service["path"].as<std::string>("") == "/convert");
  CHECK(service["port"].as<int>(0) == 443);
}

TEST_CASE("packaging: the v1beta1 schema is v1alpha1's with the moved annotations as spec fields",
          "[packaging][crd]") {
  YAML::Node definition = crd();
  YAML::Node alpha = version(definition, "v1alpha1");
  YAML::Node beta = version(definition, "v1beta1");

  std::set<std::string> alpha_spec = keys(spec_properties(alpha));
  alpha_spec.insert("features");
  CHECK(keys(spec_properties(beta)) == alpha_spec);
  std::set<std::string> alpha_canary = keys(spec_properties(alpha)["canary"]["properties"]);
  alpha_canary.insert("enabled");
  alpha_canary.insert("targetVersion");
  CHECK(keys(spec_properties(beta)["canary"]["properties"]) == alpha_canary);

  // Every field both versions have is the same field.
  for (const std::string& field : keys(spec_properties(alpha))) {
    if (field == "canary") continue;
    CAPTURE(field);
    CHECK(dump(spec_properties(beta)[field]) == dump(spec_properties(alpha)[field]));
  }
  // The canary's fields, less the schema defaults (and the description that says so): in v1beta1,
  // where spec.canary also holds the settings moved out of the annotations, defaults would add fields
  // to every object converted from v1alpha1 with a canary, and its v1alpha1 reads would then differ
  // from what was written. The operator applies the same values when they are absent.
  for (const std::string& field : keys(spec_properties(alpha)["canary"]["properties"])) {
    CAPTURE(field);
    YAML::Node alpha_field = YAML::Clone(spec_properties(alpha)["canary"]["properties"][field]);
    YAML::Node beta_field = YAML::Clone(spec_properties(beta)["canary"]["properties"][field]);
    CHECK(alpha_field["default"]);
    CHECK_FALSE(beta_field["default"]);
    for (const char* part : {"default", "description"}) {
      alpha_field.remove(part);
      beta_field.remove(part);
    }
    CHECK(dump(beta_field) == dump(alpha_field));
  }
  for (const char* part : {"subresources", "additionalPrinterColumns"}) {
    CAPTURE(part);
    CHECK(dump(beta[part]) == dump(alpha[part]));
  }
  CHECK(dump(beta["schema"]["openAPIV3Schema"]["properties"]["status"]) ==
        dump(alpha["schema"]["openAPIV3Schema"]["properties"]["status"]));
}

TEST_CASE("packaging: v1beta1 spec.features names the feature flags the operator knows", "[packaging][crd]") {
  YAML::Node features = spec_properties(version(crd(), "v1beta1"))["features"]["properties"];
  using namespace myop::myresource;
  CHECK(keys(features) == std::set<std::string>{std::string(kCanaryFeature), std::string(kOrphanSweepFeature),
                                                std::string(kOrphanPolicyFeature)});
  CHECK(features[std::string(kCanaryFeature)]["type"].as<std::string>() == "boolean");
  CHECK(features[std::string(kOrphanSweepFeature)]["type"].as<std::string>() == "boolean");
  CHECK(features[std::string(kOrphanPolicyFeature)]["enum"].as<std::vector<std::string>>() ==
        std::vector<std::string>{std::string(to_string(OrphanPolicy::Delete)),
                                 std::string(to_string(OrphanPolicy::Report))});
}

TEST_CASE("packaging: v1beta1 spec.canary.targetVersion has the tag rule of the annotation policy",
          "[packaging][crd]") {
  const std::string policy = read_text(repository_root() / "config/crd/myresources-annotations-policy.yaml");
  const std::string tag_rule = R"(matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$'))";
  REQUIRE(policy.find("variables.annotations['myorg.io/targetVersion']." + tag_rule) != std::string::npos);
  YAML::Node rules = spec_properties(
      version(crd(), "v1beta1"))["canary"]["properties"]["targetVersion"]["x-kubernetes-validations"];
  std::set<std::string> rule_texts;
  for (const YAML::Node& rule : rules) rule_texts.insert(rule["rule"].as<std::string>());
  CHECK(rule_texts == std::set<std::string>{"self." + tag_rule, "self != 'latest'"});
}
