// The Gatekeeper policies: their Rego passes its unit tests under the pinned OPA (`opa test`),
// those tests catch a broken rule, and each ConstraintTemplate embeds exactly the tested Rego.
// The Kyverno ClusterPolicies carry the same CEL as the native ValidatingAdmissionPolicies.
#include <catch2/catch.hpp>

#include <regex>

#include "policy/policy_support.h"

using namespace myop;
using namespace myop::policy;

namespace {

std::filesystem::path rego_folder() { return policy_folder() / "gatekeeper" / "rego"; }

// The Rego policies (not their tests), by stem: no_privileged_container, ...
std::vector<std::string> rego_policy_stems() {
  std::vector<std::string> stems;
  for (const auto& entry : std::filesystem::directory_iterator(rego_folder())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".rego" && name.find("_test.rego") == std::string::npos)
      stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

// Passed and total of `opa test`'s summary line "PASS: 17/17" (or "FAIL: 1/17").
std::pair<int, int> opa_summary(const std::string& output) {
  std::smatch match;
  static const std::regex summary(R"((PASS|FAIL): ([0-9]+)/([0-9]+))");
  std::pair<int, int> last{-1, -1};
  for (auto it = std::sregex_iterator(output.begin(), output.end(), summary); it != std::sregex_iterator();
       ++it)
    last = {std::stoi((*it)[2]), std::stoi((*it)[3])};
  if (output.find("FAIL: ") != std::string::npos && last.first == last.second) last.first = -1;
  return last;
}

}  // namespace

TEST_CASE("policy: the Gatekeeper Rego passes opa test with the pinned OPA", "[policy][rego]") {
  const auto stems = rego_policy_stems();
  REQUIRE(stems.size() == 4);
  for (const auto& stem : stems) {
    INFO(stem);
    CHECK(std::filesystem::exists(rego_folder() / (stem + "_test.rego")));
  }
  const auto result =
      testenv::run(opa_binary() + " test -v " + packaging::shell_quote(rego_folder().string()));
  INFO(result.output);
  REQUIRE(result.ok());
  const auto [passed, total] = opa_summary(result.output);
  CHECK(total >= 18);
  CHECK(passed == total);
}

TEST_CASE("policy: opa test fails when a Rego rule is broken", "[policy][rego]") {
  // The unit tests can fail: turn "privileged == true" into a rule that never fires.
  packaging::TemporaryFolder folder("myop-rego");
  for (const auto& entry : std::filesystem::directory_iterator(rego_folder()))
    std::filesystem::copy_file(entry.path(), folder.path() / entry.path().filename());
  const auto policy = folder.path() / "no_privileged_container.rego";
  std::string text = packaging::read_text(policy);
  const std::string rule = "container.securityContext.privileged == true";
  REQUIRE(text.find(rule) != std::string::npos);
  text.replace(text.find(rule), rule.size(), "container.securityContext.privileged == \"never\"");
  packaging::write_text(policy, text);

  const auto result = testenv::run(opa_binary() + " test " + packaging::shell_quote(folder.path().string()));
  INFO(result.output);
  CHECK_FALSE(result.ok());
  CHECK(result.output.find("test_privileged_pod_is_refused") != std::string::npos);
}

TEST_CASE("policy: each ConstraintTemplate embeds exactly its tested Rego file", "[policy][rego]") {
  for (const auto& stem : rego_policy_stems()) {
    INFO(stem);
    const auto template_path = policy_folder() / "gatekeeper" / "templates" / (stem + ".yaml");
    REQUIRE(std::filesystem::exists(template_path));
    const YAML::Node constraint_template = YAML::LoadFile(template_path.string());
    CHECK(constraint_template["kind"].as<std::string>() == "ConstraintTemplate");
    const std::string package = constraint_template["metadata"]["name"].as<std::string>();
    const YAML::Node target = constraint_template["spec"]["targets"][0];
    CHECK(target["target"].as<std::string>() == "admission.k8s.gatekeeper.sh");
    const std::string embedded = target["rego"].as<std::string>();
    CHECK(embedded == packaging::read_text(rego_folder() / (stem + ".rego")));
    // Gatekeeper finds the policy by its package, which must be the template's name.
    CHECK(embedded.find("package " + package + "\n") == 0);

    // Its Constraint names the template's kind.
    const auto constraint_path = policy_folder() / "gatekeeper" / "constraints" / (stem + ".yaml");
    REQUIRE(std::filesystem::exists(constraint_path));
    const YAML::Node constraint = YAML::LoadFile(constraint_path.string());
    CHECK(constraint["kind"].as<std::string>() ==
          constraint_template["spec"]["crd"]["spec"]["names"]["kind"].as<std::string>());
    CHECK(constraint["spec"]["enforcementAction"].as<std::string>() == "deny");
  }
}

TEST_CASE("policy: the Kyverno ClusterPolicies carry the native policies' CEL", "[policy][kyverno]") {
  for (const auto& stem : rego_policy_stems()) {
    INFO(stem);
    const auto native =
        packaging::yaml_documents(packaging::read_text(policy_folder() / "native" / (stem + ".yaml")));
    const YAML::Node kyverno = YAML::LoadFile((policy_folder() / "kyverno" / (stem + ".yaml")).string());
    REQUIRE(native.size() == 2);
    REQUIRE(native[0]["kind"].as<std::string>() == "ValidatingAdmissionPolicy");
    const YAML::Node cel = kyverno["spec"]["rules"][0]["validate"]["cel"];
    CHECK(kyverno["spec"]["rules"][0]["validate"]["failureAction"].as<std::string>() == "Enforce");
    const YAML::Node validations = native[0]["spec"]["validations"];
    REQUIRE(cel["expressions"].size() == validations.size());
    for (std::size_t i = 0; i < validations.size(); ++i)
      CHECK(trimmed(cel["expressions"][i]["expression"].as<std::string>()) ==
            trimmed(validations[i]["expression"].as<std::string>()));
    const YAML::Node variables = native[0]["spec"]["variables"];
    REQUIRE(cel["variables"].size() == variables.size());
    for (std::size_t i = 0; i < variables.size(); ++i)
      CHECK(trimmed(cel["variables"][i]["expression"].as<std::string>()) ==
            trimmed(variables[i]["expression"].as<std::string>()));
  }
}

TEST_CASE(
    "policy: every engine applies the four rules in tenant namespaces only and leaves the kube-system "
    "controllers and the kubelets alone",
    "[policy][rego][kyverno]") {
  const auto tenant_selector = [](const YAML::Node& selector) {
    return selector["matchExpressions"].size() == 1 &&
           selector["matchExpressions"][0]["key"].as<std::string>() == "myorg.io/tenant" &&
           selector["matchExpressions"][0]["operator"].as<std::string>() == "Exists" &&
           !selector["matchLabels"];
  };
  const auto stems = rego_policy_stems();
  REQUIRE(stems.size() == 4);
  std::string native_conditions;
  for (const auto& stem : stems) {
    INFO(stem);
    // Native: the binding denies in tenant namespaces only; the policy skips system components.
    const auto native =
        packaging::yaml_documents(packaging::read_text(policy_folder() / "native" / (stem + ".yaml")));
    REQUIRE(native.size() == 2);
    CHECK(tenant_selector(native[1]["spec"]["matchResources"]["namespaceSelector"]));
    CHECK(native[1]["spec"]["validationActions"][0].as<std::string>() == "Deny");
    REQUIRE(native[0]["spec"]["matchConditions"].size() == 1);
    const std::string conditions =
        trimmed(native[0]["spec"]["matchConditions"][0]["expression"].as<std::string>());
    CHECK(conditions.find("system:serviceaccount:kube-system:") != std::string::npos);
    if (native_conditions.empty()) native_conditions = conditions;
    CHECK(conditions == native_conditions);  // one rule for all four

    // Gatekeeper: the same namespaces (its Rego skips the same users: opa test).
    const YAML::Node constraint =
        YAML::LoadFile((policy_folder() / "gatekeeper" / "constraints" / (stem + ".yaml")).string());
    CHECK(tenant_selector(constraint["spec"]["match"]["namespaceSelector"]));
    CHECK_FALSE(constraint["spec"]["match"]["excludedNamespaces"]);

    // Kyverno: the same namespaces; the API server skips the system namespaces and users before it calls
    // Kyverno, and a Kyverno outage lets requests through (the native policies are the fail-closed ones).
    const YAML::Node kyverno = YAML::LoadFile((policy_folder() / "kyverno" / (stem + ".yaml")).string());
    CHECK(tenant_selector(kyverno["spec"]["rules"][0]["match"]["any"][0]["resources"]["namespaceSelector"]));
    CHECK_FALSE(kyverno["spec"]["rules"][0]["exclude"]);
    const YAML::Node webhook = kyverno["spec"]["webhookConfiguration"];
    CHECK(webhook["failurePolicy"].as<std::string>() == "Ignore");
    bool same_users = false;
    for (const auto& condition : webhook["matchConditions"])
      same_users |= trimmed(condition["expression"].as<std::string>()) == native_conditions;
    CHECK(same_users);
  }
}
