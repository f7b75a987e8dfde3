#pragma once
// What the policy integration tests share: the pinned OPA and Kyverno versions, YAML
// documents as text for kubectl, cluster-scoped objects deleted when a test ends, and a wait
// for admission policies to take effect (the API server loads them asynchronously).

#include <yaml-cpp/yaml.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../unit/packaging/packaging_files.h"
#include "support/testenv.h"

namespace myop::policy {

inline std::filesystem::path policy_folder() {
  return std::filesystem::path(testenv::source_dir()) / "config" / "policy";
}

inline std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// A value of hack/tools/versions.env, e.g. "KYVERNO_VERSION" -> "v1.19.1".
inline std::string pinned_version(const std::string& variable) {
  const std::string text =
      packaging::read_text(std::filesystem::path(testenv::source_dir()) / "hack/tools/versions.env");
  const std::string prefix = variable + "=";
  std::size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) FAIL(variable << " is not pinned in hack/tools/versions.env");
  at += 1 + prefix.size();
  return trimmed(text.substr(at, text.find('\n', at) - at));
}

// The opa binary pinned by hack/tools/opa (built by hack/build-tools.sh on first use).
inline std::string opa_binary() {
  static const std::string binary = testenv::tool_binary("opa", "opa");
  return binary;
}

// One YAML document as text (yaml-cpp quotes what needs quoting, e.g. apiGroups [""]).
inline std::string yaml_text(const YAML::Node& document) {
  YAML::Emitter emitter;
  emitter << document;
  return std::string(emitter.c_str()) + "\n";
}

// Runs `kubectl <args>` until its output contains `expected` (or `timeout` passes); returns the
// last result. Admission policies and CRDs take effect a moment after they are created.
inline testenv::CommandResult kubectl_until(const std::string& args, const std::string& expected,
                                            std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  testenv::CommandResult result = testenv::kubectl(args);
  while (result.output.find(expected) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    result = testenv::kubectl(args);
  }
  return result;
}

// Cluster-scoped objects a test created, deleted (in reverse order) when the guard goes away.
class ScopedClusterObjects {
 public:
  ScopedClusterObjects() = default;
  ~ScopedClusterObjects() {
    for (auto it = objects_.rbegin(); it != objects_.rend(); ++it)
      testenv::kubectl("delete " + it->first + " " + it->second +
                       " --ignore-not-found --wait=true --timeout=60s");
  }
  ScopedClusterObjects(const ScopedClusterObjects&) = delete;
  ScopedClusterObjects& operator=(const ScopedClusterObjects&) = delete;

  // Remembers `resource name` (e.g. "validatingadmissionpolicy my-policy") for deletion.
  void add(const std::string& resource, const std::string& name) { objects_.emplace_back(resource, name); }

 private:
  std::vector<std::pair<std::string, std::string>> objects_;
};

}  // namespace myop::policy
