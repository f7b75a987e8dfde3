// The image-signature policy is fail-closed, so its matchConditions decide what a Kyverno outage
// blocks: only objects that run the my-operator image outside the system namespaces. The API
// server evaluates them before it calls Kyverno, with the same CEL as a ValidatingAdmissionPolicy's
// matchConditions; here they guard a policy that refuses everything it matches, on the real API
// server, so what it refuses is exactly what would wait for Kyverno. No Kyverno runs here.
#include <catch2/catch.hpp>

#include "packaging/packaging_support.h"
#include "policy/policy_support.h"

using namespace myop;
using namespace myop::policy;

namespace {

constexpr const char* kPolicyName = "myop-test-kyverno-match-conditions";
constexpr const char* kRefusal = "this request would wait for Kyverno";

std::string pod(const std::string& name_space, const std::string& image) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: " + name_space +
         "}\nspec:\n  containers: [{name: app, image: \"" + image + "\"}]\n";
}

std::string deployment(const std::string& name_space, const std::string& image) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: probe, namespace: " + name_space +
         "}\nspec:\n  selector: {matchLabels: {app: probe}}\n  template:\n    metadata: {labels: {app: "
         "probe}}\n"
         "    spec:\n      initContainers: [{name: init, image: \"" +
         image + "\"}]\n      containers: [{name: app, image: \"busybox:1.36\"}]\n";
}

}  // namespace

TEST_CASE(
    "policy: the Kyverno image policy's matchConditions select only the my-operator image outside "
    "system namespaces",
    "[policy][kyverno]") {
  const YAML::Node kyverno =
      YAML::LoadFile((policy_folder() / "kyverno" / "verify_image_signature.yaml").string());
  const YAML::Node webhook = kyverno["spec"]["webhookConfiguration"];
  REQUIRE(webhook["matchConditions"].size() == 2);
  CHECK(webhook["failurePolicy"].as<std::string>() == "Fail");
  CHECK(webhook["timeoutSeconds"].as<int>() <= 15);

  YAML::Node policy;
  policy["apiVersion"] = "admissionregistration.k8s.io/v1";
  policy["kind"] = "ValidatingAdmissionPolicy";
  policy["metadata"]["name"] = kPolicyName;
  policy["spec"]["failurePolicy"] = "Fail";  // a CEL error would refuse, so it shows here
  YAML::Node pods;
  pods["apiGroups"].push_back("");
  pods["apiVersions"].push_back("v1");
  pods["operations"].push_back("CREATE");
  pods["operations"].push_back("UPDATE");
  pods["resources"].push_back("pods");
  YAML::Node controllers;
  controllers["apiGroups"].push_back("apps");
  controllers["apiVersions"].push_back("v1");
  controllers["operations"].push_back("CREATE");
  controllers["operations"].push_back("UPDATE");
  controllers["resources"].push_back("deployments");
  policy["spec"]["matchConstraints"]["resourceRules"].push_back(pods);
  policy["spec"]["matchConstraints"]["resourceRules"].push_back(controllers);
  policy["spec"]["matchConditions"] = webhook["matchConditions"];
  YAML::Node validation;
  validation["expression"] = "1 == 2";  // refuses whatever the matchConditions let through
  validation["message"] = kRefusal;
  policy["spec"]["validations"].push_back(validation);
  YAML::Node binding;
  binding["apiVersion"] = "admissionregistration.k8s.io/v1";
  binding["kind"] = "ValidatingAdmissionPolicyBinding";
  binding["metadata"]["name"] = kPolicyName;
  binding["spec"]["policyName"] = kPolicyName;
  binding["spec"]["validationActions"].push_back("Deny");

  ScopedClusterObjects cleanup;
  cleanup.add("validatingadmissionpolicybinding", kPolicyName);
  cleanup.add("validatingadmissionpolicy", kPolicyName);
  const auto created = testenv::kubectl_apply(yaml_text(policy) + "---\n" + yaml_text(binding), "");
  INFO(created.output);
  REQUIRE(created.ok());

  testenv::ScopedNamespace tenant("kyverno-match");
  const std::string operator_image = "ghcr.io/myorg/my-operator:0.1.0";
  // The policy takes effect a moment after it is created: wait until it refuses the first case.
  bool refused = false;
  for (int attempt = 0; attempt < 120 && !refused; ++attempt) {
    const auto result = packaging::server_dry_run(pod(tenant.name(), operator_image));
    refused = !result.ok() && result.output.find(kRefusal) != std::string::npos;
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE(refused);

  struct Case {
    std::string what;
    std::string manifest;
    bool goes_to_kyverno;
  };
  for (const Case& example : std::vector<Case>{
           {"a Deployment whose init container is the operator's image",
            deployment(tenant.name(),
                       "registry.example.com/myorg/my-operator@sha256:" + std::string(64, 'a')),
            true},
           {"a Pod of another image", pod(tenant.name(), "nginxinc/nginx-unprivileged:1.27.2"), false},
           {"a Deployment of another image", deployment(tenant.name(), "busybox:1.36"), false},
           {"a look-alike repository", pod(tenant.name(), "ghcr.io/other/my-operator:0.1.0"), false},
           {"the operator's image in kube-system", pod("kube-system", operator_image), false},
       }) {
    const auto result = packaging::server_dry_run(example.manifest);
    INFO(example.what << ": " << result.output);
    if (example.goes_to_kyverno) {
      CHECK_FALSE(result.ok());
      CHECK(result.output.find(kRefusal) != std::string::npos);
    } else {
      CHECK(result.ok());
    }
  }
}

TEST_CASE(
    "policy: the Kyverno tenant policies' matchConditions skip the system namespaces, the kube-system "
    "controllers and the kubelets, and nothing else",
    "[policy][kyverno]") {
  // The four share one webhookConfiguration (rego_test.cpp checks they agree): that of
  // no_privileged_container.
  const YAML::Node kyverno =
      YAML::LoadFile((policy_folder() / "kyverno" / "no_privileged_container.yaml").string());
  const YAML::Node conditions = kyverno["spec"]["webhookConfiguration"]["matchConditions"];
  REQUIRE(conditions.size() == 2);
  const std::string name = std::string(kPolicyName) + "-tenants";

  YAML::Node policy;
  policy["apiVersion"] = "admissionregistration.k8s.io/v1";
  policy["kind"] = "ValidatingAdmissionPolicy";
  policy["metadata"]["name"] = name;
  policy["spec"]["failurePolicy"] = "Fail";
  YAML::Node pods;
  pods["apiGroups"].push_back("");
  pods["apiVersions"].push_back("v1");
  pods["operations"].push_back("CREATE");
  pods["resources"].push_back("pods");
  policy["spec"]["matchConstraints"]["resourceRules"].push_back(pods);
  policy["spec"]["matchConditions"] = conditions;
  YAML::Node validation;
  validation["expression"] = "1 == 2";
  validation["message"] = kRefusal;
  policy["spec"]["validations"].push_back(validation);
  YAML::Node binding;
  binding["apiVersion"] = "admissionregistration.k8s.io/v1";
  binding["kind"] = "ValidatingAdmissionPolicyBinding";
  binding["metadata"]["name"] = name;
  binding["spec"]["policyName"] = name;
  binding["spec"]["validationActions"].push_back("Deny");
  // Only this test's namespace and kube-system: other tests on the control plane never meet it.
  testenv::ScopedNamespace tenant("kyverno-tenant");
  YAML::Node names;
  names["key"] = "kubernetes.io/metadata.name";
  names["operator"] = "In";
  names["values"].push_back(tenant.name());
  names["values"].push_back("kube-system");
  binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"].push_back(names);

  ScopedClusterObjects cleanup;
  cleanup.add("validatingadmissionpolicybinding", name);
  cleanup.add("validatingadmissionpolicy", name);
  const auto created = testenv::kubectl_apply(yaml_text(policy) + "---\n" + yaml_text(binding), "");
  INFO(created.output);
  REQUIRE(created.ok());

  const auto create_pod = [](const std::string& name_space, const std::string& as) {
    packaging::TemporaryFolder folder("myop-kyverno-pod");
    packaging::write_text(folder.path() / "pod.yaml", pod(name_space, "registry.example.com/app:1.0.0"));
    return testenv::kubectl("create --dry-run=server -f " +
                            packaging::shell_quote((folder.path() / "pod.yaml").string()) +
                            (as.empty() ? "" : " --as=" + as));
  };
  bool refused = false;
  for (int attempt = 0; attempt < 120 && !refused; ++attempt) {
    const auto result = create_pod(tenant.name(), "");
    refused = !result.ok() && result.output.find(kRefusal) != std::string::npos;
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE(refused);
  // Skipped: a system namespace; the ReplicaSet controller's Pods (it may create, not get, pods).
  const auto in_system = create_pod("kube-system", "");
  INFO(in_system.output);
  CHECK(in_system.ok());
  const auto by_controller =
      create_pod(tenant.name(), "system:serviceaccount:kube-system:replicaset-controller");
  INFO(by_controller.output);
  CHECK(by_controller.ok());
}
