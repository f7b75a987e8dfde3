#pragma once
// Builds small kube::Objects for tests.
#include <memory>
#include <string>

#include "kube/object.h"

namespace myop::runtime::testing {

inline std::shared_ptr<const kube::Object> make_object(const std::string& json) {
  auto parsed = kube::Object::parse(json);
  if (!parsed) throw std::runtime_error("bad test JSON: " + parsed.error().message);
  return std::make_shared<const kube::Object>(std::move(parsed).value());
}

inline std::shared_ptr<const kube::Object> make_named(const std::string& namespace_name,
                                                      const std::string& name, int generation = 1,
                                                      const std::string& resource_version = "1",
                                                      const std::string& extra_metadata = "") {
  return make_object(R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"namespace":")" +
                     namespace_name + R"(","name":")" + name + R"(","generation":)" +
                     std::to_string(generation) + R"(,"resourceVersion":")" + resource_version + "\"" +
                     extra_metadata + "}}");
}

inline std::shared_ptr<const kube::Object> make_owned(const std::string& namespace_name,
                                                      const std::string& name,
                                                      const std::string& owner_api_version,
                                                      const std::string& owner_kind,
                                                      const std::string& owner_name, bool controller = true) {
  return make_object(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":")" +
                     namespace_name + R"(","name":")" + name + R"(","ownerReferences":[{"apiVersion":")" +
                     owner_api_version + R"(","kind":")" + owner_kind + R"(","name":")" + owner_name +
                     R"(","uid":"u1","controller":)" + (controller ? "true" : "false") + "}]}}");
}

}  // namespace myop::runtime::testing
