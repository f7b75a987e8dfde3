// The Kyverno policies of config/policy/kyverno are schema-valid: Kyverno's CRDs, taken from
// its pinned Go module (hack/tools/versions.env KYVERNO_VERSION) in the module cache, are
// installed on the real API server, and every policy passes a server-side dry run with strict
// field validation. A policy with a misspelt field fails the same check.
#include <catch2/catch.hpp>

#include "policy/policy_support.h"

using namespace myop;
using namespace myop::policy;

namespace {

// config/crds/kyverno of the pinned Kyverno module (downloaded into the module cache once).
std::filesystem::path kyverno_crd_folder() {
  const std::string version = pinned_version("KYVERNO_VERSION");
  const auto result =
      testenv::run("go mod download -json github.com/kyverno/kyverno@" + version + " 2>/dev/null");
  INFO(result.output);
  REQUIRE(result.ok());
  const auto at = result.output.find("\"Dir\": \"");
  REQUIRE(at != std::string::npos);
  const auto start = at + 8;
  const std::filesystem::path folder =
      std::filesystem::path(result.output.substr(start, result.output.find('"', start) - start)) / "config" /
      "crds" / "kyverno";
  REQUIRE(std::filesystem::exists(folder / "kyverno.io_clusterpolicies.yaml"));
  return folder;
}

testenv::CommandResult strict_dry_run(const std::string& path) {
  return testenv::kubectl("apply --dry-run=server --validate=strict -f " + packaging::shell_quote(path));
}

}  // namespace

TEST_CASE("policy: the Kyverno ClusterPolicies are valid against Kyverno's pinned CRDs",
          "[policy][kyverno]") {
  // Kyverno's CRDs, unless this cluster already has them (then they are left as they were).
  ScopedClusterObjects crds;
  const std::filesystem::path crd_folder = kyverno_crd_folder();
  for (const auto& file : packaging::yaml_files(crd_folder)) {
    for (const auto& crd : packaging::yaml_documents(packaging::read_text(file))) {
      const std::string name = crd["metadata"]["name"].as<std::string>();
      if (testenv::kubectl("get crd " + name).ok()) continue;
      // Server-side: the CRDs are too large for the last-applied annotation of a client-side apply.
      testenv::kubectl_or_fail("apply --server-side -f " + packaging::shell_quote(file.string()));
      crds.add("crd", name);
    }
  }
  testenv::kubectl_or_fail("wait --for condition=Established --timeout=60s crd/clusterpolicies.kyverno.io");

  const auto policies = packaging::yaml_files(policy_folder() / "kyverno");
  REQUIRE(policies.size() == 5);
  for (const auto& file : policies) {
    INFO(file.filename().string());
    const YAML::Node policy = YAML::LoadFile(file.string());
    CHECK(policy["apiVersion"].as<std::string>() == "kyverno.io/v1");
    CHECK(policy["kind"].as<std::string>() == "ClusterPolicy");
    // The dry run answers once the new CRD's schema is served; retry briefly.
    testenv::CommandResult result =
        kubectl_until("apply --dry-run=server --validate=strict -f " + packaging::shell_quote(file.string()),
                      "(server dry run)", std::chrono::seconds(30));
    INFO(result.output);
    CHECK(result.ok());
  }

  // The check can fail: a misspelt field and a wrong type are refused.
  packaging::TemporaryFolder folder("myop-kyverno");
  {
    std::string text = packaging::read_text(policy_folder() / "kyverno" / "verify_image_signature.yaml");
    const std::string field = "subjectRegExp:";
    REQUIRE(text.find(field) != std::string::npos);
    text.replace(text.find(field), field.size(), "subjectRegex:");
    packaging::write_text(folder.path() / "misspelt.yaml", text);
    const auto result = strict_dry_run((folder.path() / "misspelt.yaml").string());
    INFO(result.output);
    CHECK_FALSE(result.ok());
    CHECK(result.output.find("subjectRegex") != std::string::npos);
  }
  {
    std::string text = packaging::read_text(policy_folder() / "kyverno" / "no_privileged_container.yaml");
    const std::string field = "background: true";
    REQUIRE(text.find(field) != std::string::npos);
    text.replace(text.find(field), field.size(), "background: [true]");
    packaging::write_text(folder.path() / "wrong_type.yaml", text);
    const auto result = strict_dry_run((folder.path() / "wrong_type.yaml").string());
    INFO(result.output);
    CHECK_FALSE(result.ok());
  }
}
