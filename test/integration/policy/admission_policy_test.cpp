// The native policies of config/policy/native (ValidatingAdmissionPolicy + binding), applied to
// the real API server: in tenant namespaces (label myorg.io/tenant) they refuse a privileged
// Deployment, privilege escalation, unpinned images, a :latest MyResource and missing limits, and
// accept every Deployment the operator generates (src/myresource/desired.h); other namespaces (CNI,
// CSI, monitoring, ...) and the kube-system controllers' own writes are left alone.
//
// Here each policy is renamed with a unique suffix and each binding additionally selects namespaces
// labelled myorg.io/policy-test=<suffix>, which only this test's namespaces carry: other tests on the
// same control plane are never affected. Every request is a server-side dry run, so nothing but the
// policies and namespaces is created.
#include <catch2/catch.hpp>

#include <algorithm>

#include "myresource/desired.h"
#include "myresource/types.h"
#include "policy/policy_support.h"

using namespace myop;
using namespace myop::policy;

namespace {

constexpr const char* kTestLabel = "myorg.io/policy-test";

std::string unique_suffix() {
  // Letters first: a label value of digits only would be read as a YAML number.
  return "p" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 100000000);
}

// The shipped native policies, narrowed to this test's namespaces, applied; deleted at the end.
// `extra_myresource_group` also lets the MyResource rules match a CEL-less copy of the CRD.
class ScopedNativePolicies {
 public:
  ScopedNativePolicies(std::string suffix, std::string extra_myresource_group)
      : suffix_(std::move(suffix)), extra_myresource_group_(std::move(extra_myresource_group)) {}

  // Applies config/policy/native/<stem>.yaml: one policy and its binding.
  void apply(const std::string& stem) {
    const auto file = policy_folder() / "native" / (stem + ".yaml");
    const auto documents = packaging::yaml_documents(packaging::read_text(file));
    REQUIRE(documents.size() == 2);
    for (YAML::Node document : documents) {
      const std::string kind = document["kind"].as<std::string>();
      const std::string name = document["metadata"]["name"].as<std::string>() + "-" + suffix_;
      document["metadata"]["name"] = name;
      if (kind == "ValidatingAdmissionPolicy") {
        for (YAML::Node rule : document["spec"]["matchConstraints"]["resourceRules"]) {
          if (rule["apiGroups"][0].as<std::string>() == std::string(myresource::kGroup))
            rule["apiGroups"].push_back(extra_myresource_group_);
        }
        objects_.add("validatingadmissionpolicy", name);
        names_.push_back(name);
      } else {
        REQUIRE(kind == "ValidatingAdmissionPolicyBinding");
        document["spec"]["policyName"] = document["spec"]["policyName"].as<std::string>() + "-" + suffix_;
        document["spec"]["matchResources"]["namespaceSelector"]["matchLabels"][kTestLabel] = suffix_;
        objects_.add("validatingadmissionpolicybinding", name);
      }
      const auto applied = testenv::kubectl_apply(yaml_text(document));
      INFO(yaml_text(document) << applied.output);
      REQUIRE(applied.ok());
    }
  }

  std::size_t policy_count() const { return names_.size(); }

  // Every policy compiles without a type-checking error.
  std::string type_check_warnings() {
    std::string warnings;
    for (const auto& name : names_) {
      auto result =
          testenv::kubectl("get validatingadmissionpolicy " + name +
                           " -o jsonpath='{.status.typeChecking.expressionWarnings}' --ignore-not-found");
      if (!trimmed(result.output).empty()) warnings += name + ": " + result.output + "\n";
    }
    return warnings;
  }

 private:
  std::string suffix_;
  std::string extra_myresource_group_;
  ScopedClusterObjects objects_;
  std::vector<std::string> names_;
};

// A Deployment with one container; `container_extra` is YAML for the container's other fields.
std::string deployment(const std::string& name, const std::string& image,
                       const std::string& container_extra) {
  return "apiVersion: apps/v1\n"
         "kind: Deployment\n"
         "metadata: {name: " +
         name +
         "}\n"
         "spec:\n"
         "  replicas: 1\n"
         "  selector: {matchLabels: {app: " +
         name +
         "}}\n"
         "  template:\n"
         "    metadata: {labels: {app: " +
         name +
         "}}\n"
         "    spec:\n"
         "      containers:\n"
         "        - name: app\n"
         "          image: " +
         image + "\n" + container_extra;
}

const std::string kHardened =
    "          securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, "
    "capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}\n";
const std::string kLimits = "          resources: {limits: {cpu: 500m, memory: 128Mi}}\n";
// A MyResource's limits, so that in a tenant namespace only the rule under test refuses it.
const std::string kMyResourceLimits = "  resources: {limits: {cpu: 500m, memory: 128Mi}}\n";

// Writes a manifest into the build tree's testenv folder; returns its path.
std::string write_manifest(const std::string& manifest) {
  static int counter = 0;
  const std::string path =
      testenv::binary_dir() + "/testenv/policy-manifest-" + std::to_string(++counter) + ".yaml";
  packaging::write_text(path, manifest);
  return path;
}

testenv::CommandResult dry_run_create(const std::string& manifest, const std::string& namespace_name) {
  return testenv::kubectl_apply(manifest, "-n " + namespace_name + " --dry-run=server");
}

std::string myresource_manifest(const std::string& api_version, const std::string& name,
                                const std::string& image, const std::string& spec_extra = "") {
  return "apiVersion: " + api_version + "\nkind: MyResource\nmetadata: {name: " + name +
         "}\nspec:\n  image: " + image + "\n" + spec_extra;
}

// A copy of the MyResource CRD in another group, without the CEL rules on spec.image, so the
// admission policy (not the CRD) is what refuses an unpinned image there.
std::string celless_crd_copy(const std::string& group) {
  YAML::Node crd = YAML::LoadFile(testenv::source_dir() + "/config/crd/myorg.io_myresources.yaml");
  crd["metadata"]["name"] = "myresources." + group;
  crd["metadata"].remove("annotations");
  crd["spec"]["group"] = group;
  // No conversion webhook for the copy: the API server rewrites only apiVersion between versions.
  crd["spec"]["conversion"] = YAML::Load("{strategy: None}");
  for (YAML::Node version : crd["spec"]["versions"]) {
    YAML::Node image = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"];
    image.remove("x-kubernetes-validations");
  }
  return yaml_text(crd);
}

myresource::MyResource operator_input(const std::string& namespace_name, const std::string& image) {
  myresource::MyResource resource;
  resource.metadata.name = "web";
  resource.metadata.namespace_name = namespace_name;
  resource.metadata.uid = "0f3c7a5e-1b2d-4c3e-9f4a-5b6c7d8e9f00";
  resource.metadata.generation = 3;
  resource.spec.image = image;
  resource.spec.replicas = 2;
  resource.spec.port = 8080;
  resource.spec.env = {{"MODE", "production"}};
  resource.spec.resources.requests = {{"cpu", "100m"}, {"memory", "64Mi"}};
  resource.spec.resources.limits = {{"cpu", "500m"}, {"memory", "256Mi"}};
  return resource;
}

}  // namespace

TEST_CASE("policy: the native admission policies refuse what they must and accept the operator's Deployments",
          "[policy][admission]") {
  const std::string suffix = unique_suffix();
  const std::string test_group = "policytest" + suffix + ".myorg.io";

  // The MyResource CRD (config/crd's, converted by the fixture's webhook), installed if this cluster
  // does not have it yet.
  ScopedClusterObjects crds;
  if (!testenv::kubectl("get crd myresources.myorg.io").ok()) {
    testenv::kubectl_or_fail("apply --server-side -f " + testenv::crd_manifest());
    crds.add("crd", "myresources.myorg.io");
  }
  REQUIRE(testenv::kubectl_apply(celless_crd_copy(test_group), "--server-side").ok());
  crds.add("crd", "myresources." + test_group);
  testenv::kubectl_or_fail(
      "wait --for condition=Established --timeout=60s crd/myresources.myorg.io crd/myresources." +
      test_group);

  // `tenant` is a tenant namespace; `plain` carries the test's label but is no tenant's (as the namespaces
  // of CNI, CSI, monitoring or Argo CD are not); `unlabelled` is not this test's at all.
  testenv::ScopedNamespace plain("policy-plain");
  testenv::ScopedNamespace tenant("policy-tenant");
  testenv::ScopedNamespace unlabelled("policy-other");
  testenv::kubectl_or_fail("label namespace " + plain.name() + " " + kTestLabel + "=" + suffix);
  testenv::kubectl_or_fail("label namespace " + tenant.name() + " " + kTestLabel + "=" + suffix +
                           " myorg.io/tenant=" + tenant.name());
  const std::string& checked = tenant.name();

  // Privileged implies privilege escalation (the API server refuses privileged together with
  // allowPrivilegeEscalation: false), and only the first refusing policy is reported: so the
  // privileged-containers policy is applied alone first, and proven alone.
  ScopedNativePolicies policies(suffix, test_group);
  policies.apply("no_privileged_container");
  const auto privileged =
      deployment("privileged", "app:1.0.0", "          securityContext: {privileged: true}\n");
  {
    // The policies take effect once the API server has loaded them.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    testenv::CommandResult result = dry_run_create(privileged, checked);
    while (result.ok() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      result = dry_run_create(privileged, checked);
    }
    INFO(result.output);
    REQUIRE_FALSE(result.ok());
    CHECK(result.output.find("myorg.io-no-privileged-containers-" + suffix) != std::string::npos);
    CHECK(result.output.find("must not run privileged") != std::string::npos);
  }
  {  // a privileged init container is refused too (still the only policy loaded)
    const auto manifest =
        deployment("init", "app:1.0.0", kHardened) +
        "      initContainers:\n"
        "        - {name: setup, image: 'busybox:1.36', securityContext: {privileged: true}}\n";
    const auto result = dry_run_create(manifest, checked);
    INFO(result.output);
    CHECK_FALSE(result.ok());
    CHECK(result.output.find("privileged: true): setup") != std::string::npos);
  }

  for (const char* stem : {"no_privilege_escalation", "pinned_image_tag", "required_resource_limits"})
    policies.apply(stem);
  REQUIRE(policies.policy_count() == 4);
  // A hardened but unpinned Deployment: refused once the pinned-image policy is loaded too.
  CHECK_FALSE(kubectl_until("apply --dry-run=server -n " + checked + " -f " +
                                packaging::shell_quote(
                                    write_manifest(deployment("wait", "app:latest", kHardened + kLimits))),
                            "myorg.io-pinned-image-tags-" + suffix)
                  .ok());
  CHECK(policies.type_check_warnings() == "");
  CHECK_FALSE(dry_run_create(privileged, checked).ok());

  {  // privilege escalation, explicit or left unset, is refused
    for (const std::string& context : std::vector<std::string>{
             std::string("          securityContext: {allowPrivilegeEscalation: true}\n"), std::string()}) {
      const auto result = dry_run_create(deployment("escalating", "app:1.0.0", context + kLimits), checked);
      INFO(context << result.output);
      CHECK_FALSE(result.ok());
      CHECK(result.output.find("myorg.io-no-privilege-escalation-" + suffix) != std::string::npos);
    }
  }

  {  // unpinned images are refused, pinned ones accepted
    for (const std::string& image : std::vector<std::string>{
             "app:latest", "app", "registry.example.com:5000/team/app",
             "app:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
      const auto result =
          dry_run_create(deployment("unpinned", "'" + image + "'", kHardened + kLimits), checked);
      INFO(image << ": " << result.output);
      CHECK_FALSE(result.ok());
      CHECK(result.output.find("myorg.io-pinned-image-tags-" + suffix) != std::string::npos);
    }
    for (const std::string& image : std::vector<std::string>{
             "app:1.2.3", "registry.example.com:5000/team/app:1.2.3",
             "app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
      const auto result =
          dry_run_create(deployment("pinned", "'" + image + "'", kHardened + kLimits), checked);
      INFO(image << ": " << result.output);
      CHECK(result.ok());
    }
  }

  {  // a :latest MyResource is refused, by the CRD and by the policy on its own
    const auto with_crd = dry_run_create(
        myresource_manifest("myorg.io/v1alpha1", "latest", "app:latest", kMyResourceLimits), checked);
    INFO(with_crd.output);
    CHECK_FALSE(with_crd.ok());
    CHECK(with_crd.output.find("latest") != std::string::npos);

    // Without the CRD's CEL rules only the policy stands between :latest and the cluster, in each
    // served version.
    for (const std::string version : {"v1alpha1", "v1beta1"}) {
      const std::string copy_version = test_group + "/" + version;
      INFO(copy_version);
      const auto copy_latest = dry_run_create(
          myresource_manifest(copy_version, "latest", "app:latest", kMyResourceLimits), checked);
      INFO(copy_latest.output);
      CHECK_FALSE(copy_latest.ok());
      CHECK(copy_latest.output.find("myorg.io-pinned-image-tags-" + suffix) != std::string::npos);
      CHECK(copy_latest.output.find("must not use :latest") != std::string::npos);

      const auto copy_untagged =
          dry_run_create(myresource_manifest(copy_version, "untagged", "app", kMyResourceLimits), checked);
      INFO(copy_untagged.output);
      CHECK_FALSE(copy_untagged.ok());
      CHECK(copy_untagged.output.find("must carry a tag or a digest") != std::string::npos);
      CHECK(
          dry_run_create(myresource_manifest(copy_version, "pinned", "app:1.2.3", kMyResourceLimits), checked)
              .ok());
    }
    CHECK(dry_run_create(myresource_manifest("myorg.io/v1alpha1", "pinned", "app:1.2.3", kMyResourceLimits),
                         checked)
              .ok());
  }

  {  // limits are required in tenant namespaces only
    const auto without_limits = deployment("unlimited", "app:1.0.0", kHardened);
    const auto in_tenant = dry_run_create(without_limits, tenant.name());
    INFO(in_tenant.output);
    CHECK_FALSE(in_tenant.ok());
    CHECK(in_tenant.output.find("myorg.io-tenant-resource-limits-" + suffix) != std::string::npos);
    CHECK(dry_run_create(without_limits, plain.name()).ok());
    CHECK(dry_run_create(deployment("limited", "app:1.0.0", kHardened + kLimits), tenant.name()).ok());

    for (const std::string api_version : {"myorg.io/v1alpha1", "myorg.io/v1beta1"}) {
      INFO(api_version);
      const auto mr_without_limits =
          dry_run_create(myresource_manifest(api_version, "unlimited", "app:1.0.0"), tenant.name());
      INFO(mr_without_limits.output);
      CHECK_FALSE(mr_without_limits.ok());
      CHECK(mr_without_limits.output.find("myorg.io-tenant-resource-limits-" + suffix) != std::string::npos);
      CHECK(dry_run_create(myresource_manifest(api_version, "limited", "app:1.0.0",
                                               "  resources: {limits: {cpu: 500m, memory: 128Mi}}\n"),
                           tenant.name())
                .ok());
    }
  }

  {  // every Deployment the operator generates is accepted, in a tenant namespace too
    for (const auto* namespace_name : {&plain.name(), &tenant.name()}) {
      for (const std::string& image : std::vector<std::string>{
               "registry.example.com:5000/team/web:1.4.2",
               "web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
        const myresource::MyResource resource = operator_input(*namespace_name, image);
        const std::string stable = myresource::desired_stable_deployment(resource).to_json_string();
        const auto stable_result = dry_run_create(stable, *namespace_name);
        INFO(stable << "\n" << stable_result.output);
        CHECK(stable_result.ok());

        myresource::CanaryDeploymentPlan plan;
        plan.image = "registry.example.com:5000/team/web:1.5.0";
        plan.replicas = 1;
        plan.started_at = "2026-01-02T03:04:05Z";
        const std::string canary = myresource::desired_canary_deployment(resource, plan).to_json_string();
        const auto canary_result = dry_run_create(canary, *namespace_name);
        INFO(canary << "\n" << canary_result.output);
        CHECK(canary_result.ok());
      }
    }
  }

  {  // the bindings leave other namespaces alone: not a tenant's, or not this test's
    for (const auto* namespace_name : {&plain.name(), &unlabelled.name()}) {
      INFO(*namespace_name);
      CHECK(dry_run_create(privileged, *namespace_name).ok());
      CHECK(dry_run_create(deployment("unpinned", "app:latest", ""), *namespace_name).ok());
    }
  }

  {  // the kube-system controllers' own writes are left alone (matchConditions), anyone else's are not
    const std::string pod =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: made-by-a-controller}\nspec:\n"
        "  containers: [{name: app, image: 'app:latest', securityContext: {privileged: true}}]\n";
    // `create`, not `apply`: the ReplicaSet controller may create pods but not get them.
    const auto by_controller = testenv::kubectl(
        "create --dry-run=server -n " + checked + " -f " + packaging::shell_quote(write_manifest(pod)) +
        " --as=system:serviceaccount:kube-system:replicaset-controller");
    INFO(by_controller.output);
    CHECK(by_controller.ok());
    const auto by_admin = dry_run_create(pod, checked);
    INFO(by_admin.output);
    CHECK_FALSE(by_admin.ok());
    CHECK(by_admin.output.find(suffix) != std::string::npos);
  }
}
