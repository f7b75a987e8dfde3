// What the deletion, scale and scope tests read back from the real control plane: whole lists of
// MyResources and Deployments through the admin client (one request each, where kubectl would
// start a process per object), and a guard that releases MyResources a failed test left behind.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kube/kube_test_support.h"
#include "kube/object.h"
#include "myresource/operator_process.h"
#include "support/testenv.h"

namespace myop::testing {

inline constexpr const char* kOperatorFinalizer = "myorg.io/finalizer";
inline constexpr const char* kManagedBySelector = "app.kubernetes.io/managed-by=my-operator";

// The options of an operator run by these tests: its own user, limited to `namespaces` (empty: all),
// its feature-flag ConfigMap and Events in `pod_namespace`.
inline OperatorOptions operator_options(const std::string& user, const std::vector<std::string>& namespaces,
                                        const std::string& pod_namespace) {
  OperatorOptions options;
  options.user = user;
  options.namespaces = namespaces;
  options.pod_namespace = pod_namespace;
  return options;
}

// Every object of `type` in `namespace_` ("" = all namespaces), by a fresh LIST; FAILs on error.
inline rapidjson::Document list_objects(kube::Client& client, const kube::ResourceType& type,
                                        const std::string& namespace_,
                                        const std::string& label_selector = "") {
  kube::ListOptions options;
  options.label_selector = label_selector;
  auto list = client.list_all(type, namespace_, options);
  if (!list)
    FAIL("LIST " << type.resource << " in '" << namespace_ << "' failed: " << list.error().to_string());
  return std::move(list).value();
}

inline std::vector<std::string> names_of(const rapidjson::Document& list) {
  std::vector<std::string> names;
  for (const auto& item : list["items"].GetArray()) names.emplace_back(kube::ObjectView(item).name());
  return names;
}

// The reason and status of condition `type` of an object in a list ("" when absent).
inline std::string condition_field(const rapidjson::Value& object, const std::string& type,
                                   const char* field) {
  const auto* conditions = kube::ObjectView(object).find({"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray()) return {};
  for (const auto& condition : conditions->GetArray()) {
    if (condition.IsObject() && condition.HasMember("type") && condition["type"].IsString() &&
        type == condition["type"].GetString() && condition.HasMember(field) && condition[field].IsString())
      return condition[field].GetString();
  }
  return {};
}

// Whether a MyResource is Ready=True for its current generation.
inline bool ready_and_current(const rapidjson::Value& object) {
  const kube::ObjectView view(object);
  const auto* observed = view.find({"status", "observedGeneration"});
  return observed != nullptr && observed->IsInt64() && observed->GetInt64() == view.generation() &&
         condition_field(object, "Ready", "status") == "True";
}

// On destruction (after the operator is stopped: declare it before the OperatorProcess), drops
// the operator's finalizer from every MyResource left in the namespace, so a failed test does not
// leave its namespace Terminating for ever.
class FinalizerRelease {
 public:
  explicit FinalizerRelease(std::string namespace_) : namespace_(std::move(namespace_)) {}
  ~FinalizerRelease() {
    testenv::run("kubectl --kubeconfig '" + testenv::kubeconfig_path() + "' get myresources -n " +
                 namespace_ + " -o name 2>/dev/null | xargs -r -P 4 -n 20 kubectl --kubeconfig '" +
                 testenv::kubeconfig_path() + "' patch -n " + namespace_ +
                 " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
  }
  FinalizerRelease(const FinalizerRelease&) = delete;
  FinalizerRelease& operator=(const FinalizerRelease&) = delete;

 private:
  std::string namespace_;
};

}  // namespace myop::testing
