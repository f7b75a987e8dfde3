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

inline std::string text_at(const kube::Object& object, std::initializer_list<std::string_view> path) {
  const kube::JsonValue* value = object.view().find(path);
  REQUIRE(value != nullptr);
  REQUIRE(value->IsString());
  return value->GetString();
}

}  // namespace myop::myresource::testing
