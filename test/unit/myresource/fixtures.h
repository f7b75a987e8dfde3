// Builders shared by the myresource unit tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "kube/object.h"
#include "myresource/types.h"

namespace myop::myresource::testing {

inline MyResource make_resource(std::string image = "reg:5000/team/app:1.0") {
  MyResource resource;
  resource.metadata.name = "web";
  resource.metadata.namespace_name = "team-a";
  resource.metadata.uid = "uid-1";
  resource.metadata.generation = 4;
  resource.metadata.labels = {{"app.kubernetes.io/instance", "argo-app"}, {"team", "a"}};
  resource.spec.image = std::move(image);
  resource.spec.replicas = 3;
  return resource;
}

inline kube::Object parse_json(const std::string& json) {
  auto object = kube::Object::parse(json);
  REQUIRE(object.ok());
  return std::move(object).value();
}

// `resource` as the reconciler sees it when its metadata.annotations are those of a v1alpha1 object:
// a v1alpha1 object with those annotations (and spec.image) is read by parse_myresource, which
// converts it to v1beta1, and the v1beta1 fields the annotations become (spec.canary.enabled,
// targetVersion, spec.features) and the annotations left are taken from it. The rest of `resource`
// is kept as it is.
inline MyResource read_v1alpha1_annotations(MyResource resource) {
  kube::Object object = parse_json(R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{}})");
  object.set_string_member(object.json()["metadata"], "name", resource.metadata.name);
  for (const auto& [key, value] : resource.metadata.annotations) object.set_annotation(key, value);
  object.set_member(object.json(), "spec", kube::JsonValue(rapidjson::kObjectType));
  object.set_string_member(object.json()["spec"], "image", resource.spec.image);
  ParsedMyResource parsed = parse_myresource(object.json());
  resource.metadata.annotations = parsed.resource.metadata.annotations;
  resource.spec.canary.enabled = parsed.resource.spec.canary.enabled;
  resource.spec.canary.target_version = parsed.resource.spec.canary.target_version;
  resource.spec.features = parsed.resource.spec.features;
  return resource;
}

inline std::string text_at(const kube::Object& object, std::initializer_list<std::string_view> path) {
  const kube::JsonValue* value = object.view().find(path);
  REQUIRE(value != nullptr);
  REQUIRE(value->IsString());
  return value->GetString();
}

}  // namespace myop::myresource::testing
