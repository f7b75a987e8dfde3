// The chart's ServiceAccount policy (templates/service-account-policy.yaml), tested as an attacker holding
// the operator's tokens would meet it: `helm install`, then TokenRequest tokens of the manager's and the
// webhook's ServiceAccounts, and kubectl with nothing but those tokens. RBAC allows every request below;
// the policy is what refuses the ones a stolen token would make (a Deployment without the managed-by label
// or unhardened, someone else's Deployment, a CRD patch of clientConfig.url), and lets through what the
// operator writes (desired.cpp's Deployments, the caBundle, status.storedVersions), so the test fails
// both ways. Last, the operator itself runs under the manager's token: a MyResource's Deployment is
// created and deleted through the policy.
#include <catch2/catch.hpp>

#include <fstream>

#include "myresource/desired.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;
using namespace std::chrono_literals;

namespace {

// A TokenRequest token of `account` in `namespace_name`, as its pods get one.
std::string service_account_token(const std::string& namespace_name, const std::string& account) {
  const std::string output = trimmed(
      testenv::kubectl_or_fail("create token " + account + " -n " + namespace_name + " --duration=10m"));
  return output.substr(output.find_last_of('\n') + 1);
}

// A kubeconfig that holds only `token`.
std::string token_kubeconfig(const std::string& account, const std::string& token) {
  const std::string path = testenv::binary_dir() + "/testenv/sa-policy-" + account + ".kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""
                      << testenv::server_url() << "\", certificate-authority: \"" << testenv::ca_path()
                      << "\"}}]\nusers: [{name: u, user: {token: \"" << token
                      << "\"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n";
  return path;
}

// A merge patch of `path` (an API path) with `token`, as a server-side dry run: the output ends with
// "HTTP <status>". The operator patches without reading first; kubectl patch would get the object
// first, which the operator's RBAC does not allow (it reads its caches).
testenv::CommandResult api_patch(const std::string& token, const std::string& path,
                                 const std::string& patch) {
  return testenv::run(
      "curl -s --cacert " + shell_quote(testenv::ca_path()) + " -H " +
      shell_quote("Authorization: Bearer " + token) +
      " -H 'Content-Type: application/merge-patch+json' -X PATCH -w '\nHTTP %{http_code}' -d " +
      shell_quote(patch) + " " + shell_quote(testenv::server_url() + path + "?dryRun=All"));
}

testenv::CommandResult patch_crd_status(const std::string& token, const std::string& patch) {
  return api_patch(
      token, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/myresources.myorg.io/status", patch);
}

testenv::CommandResult patch_deployment(const std::string& token, const std::string& namespace_name,
                                        const std::string& name, const std::string& patch) {
  return api_patch(token, "/apis/apps/v1/namespaces/" + namespace_name + "/deployments/" + name, patch);
}

// kubectl with only the given kubeconfig's credentials; `stdin_text` is piped in when not empty.
testenv::CommandResult kubectl_as(const std::string& kubeconfig, const std::string& args,
                                  const std::string& stdin_text = "") {
  const std::string command = "kubectl --kubeconfig " + shell_quote(kubeconfig) + " " + args;
  if (stdin_text.empty()) return testenv::run(command);
  return testenv::run("printf '%s' " + shell_quote(stdin_text) + " | " + command);
}

myresource::MyResource operator_input(const std::string& namespace_name, const std::string& name,
                                      const std::string& uid = "0f3c7a5e-1b2d-4c3e-9f4a-5b6c7d8e9f00") {
  myresource::MyResource resource;
  resource.metadata.name = name;
  resource.metadata.namespace_name = namespace_name;
  resource.metadata.uid = uid;
  resource.metadata.generation = 1;
  resource.spec.image = "registry.example.com/team/web:1.4.2";
  resource.spec.replicas = 1;
  resource.spec.resources.limits = {{"cpu", "500m"}, {"memory", "256Mi"}};
  return resource;
}

std::string stable_deployment(const std::string& namespace_name, const std::string& name,
                              const std::string& uid = "0f3c7a5e-1b2d-4c3e-9f4a-5b6c7d8e9f00") {
  return myresource::desired_stable_deployment(operator_input(namespace_name, name, uid)).to_json_string();
}

// `text` with the first `from` replaced by `to` (REQUIREd to be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  INFO("'" << from << "' in " << text);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// `deployment` (desired.cpp's JSON) without its metadata.ownerReferences.
std::string without_owner_references(std::string deployment) {
  const std::string key = ",\"ownerReferences\":[";
  const auto start = deployment.find(key);
  REQUIRE(start != std::string::npos);
  const auto end = deployment.find(']', start + key.size());
  REQUIRE(end != std::string::npos);
  return deployment.erase(start, end + 1 - start);
}

}  // namespace

TEST_CASE(
    "packaging: with the operator's own tokens, the ServiceAccount policy refuses unlabelled, unhardened or "
    "foreign Deployments and CRD changes beyond the caBundle, and passes the operator's own writes",
    "[packaging][helm][policy][rbac]") {
  testenv::ScopedNamespace release_namespace("pkg-sa-policy");
  testenv::ScopedNamespace work_namespace("pkg-sa-work");
  const std::string ns = release_namespace.name();
  const std::string work = work_namespace.name();
  const std::string release = "pkg-sap";
  const std::string fullname = release + "-my-operator";
  testenv::apply_crd();
  ReleaseGuard guard(release, ns);
  {
    const auto installed = helm("install " + release + " " +
                                shell_quote(testenv::source_dir() + "/charts/my-operator") + " -n " + ns +
                                " --set crds.install=false --set webhook.patchCaBundle=true --set "
                                "replicaCount=0 --set webhook.deployment.replicas=1");
    INFO(installed.output);
    REQUIRE(installed.ok());
  }
  const std::string manager_token = service_account_token(ns, fullname);
  const std::string manager = token_kubeconfig(fullname, manager_token);
  const std::string webhook =
      token_kubeconfig(fullname + "-webhook", service_account_token(ns, fullname + "-webhook"));
  const std::string deployments_policy = fullname + "-service-account-deployments";
  const std::string crds_policy = fullname + "-service-account-crds";

  // The API server loads a new policy a moment after it is created: wait until it refuses.
  const std::string unlabelled = replaced(stable_deployment(work, "unlabelled"),
                                          "\"app.kubernetes.io/managed-by\":\"my-operator\",", "");
  testenv::CommandResult refused;
  for (int attempt = 0; attempt < 120; ++attempt) {
    refused = kubectl_as(manager, "create --dry-run=server -f -", unlabelled);
    if (refused.output.find(deployments_policy) != std::string::npos) break;
    std::this_thread::sleep_for(500ms);
  }
  {
    INFO("a Deployment without app.kubernetes.io/managed-by=my-operator: " << refused.output);
    CHECK_FALSE(refused.ok());
    CHECK(refused.output.find(deployments_policy) != std::string::npos);
    CHECK(refused.output.find("managed-by=my-operator") != std::string::npos);
  }

  SECTION("Deployments: only labelled, MyResource-owned, hardened ones, and only the operator's own") {
    // What the operator writes passes: the stable and the canary Deployment.
    const auto stable = kubectl_as(manager, "create --dry-run=server -f -", stable_deployment(work, "web"));
    INFO(stable.output);
    CHECK(stable.ok());
    myresource::CanaryDeploymentPlan plan;
    plan.image = "registry.example.com/team/web:1.5.0";
    plan.replicas = 1;
    plan.started_at = "2026-01-02T03:04:05Z";
    const auto canary =
        kubectl_as(manager, "create --dry-run=server -f -",
                   myresource::desired_canary_deployment(operator_input(work, "web"), plan).to_json_string());
    INFO(canary.output);
    CHECK(canary.ok());

    // Labelled, but not what the operator writes.
    const std::string web = stable_deployment(work, "web");
    for (const auto& [what, manifest] : std::vector<std::pair<std::string, std::string>>{
             {"privilege escalation allowed",
              replaced(web, "\"allowPrivilegeEscalation\":false", "\"allowPrivilegeEscalation\":true")},
             {"capabilities kept", replaced(web, "\"drop\":[\"ALL\"]", "\"drop\":[\"NET_RAW\"]")},
             {"root allowed", replaced(replaced(web, "\"runAsNonRoot\":true", "\"runAsNonRoot\":false"),
                                       "\"runAsNonRoot\":true", "\"runAsNonRoot\":false")},
             {"another ServiceAccount",
              replaced(web, "\"securityContext\":{\"runAsNonRoot\"",
                       "\"serviceAccountName\":\"admin\",\"securityContext\":{\"runAsNonRoot\"")},
             {"host network", replaced(web, "\"securityContext\":{\"runAsNonRoot\"",
                                       "\"hostNetwork\":true,\"securityContext\":{\"runAsNonRoot\"")},
             {"no owner", without_owner_references(web)},
         }) {
      const auto result = kubectl_as(manager, "create --dry-run=server -f -", manifest);
      INFO(what << ": " << result.output);
      CHECK_FALSE(result.ok());
      CHECK(result.output.find(deployments_policy) != std::string::npos);
    }

    // Existing Deployments: the operator's own may change and go, someone else's may not, not even by
    // adding the label.
    testenv::kubectl_or_fail("create deployment foreign --image=registry.example.com/app:1.0.0 -n " + work);
    // Its owner exists, so the garbage collector leaves it alone; no operator runs in this section.
    REQUIRE(
        testenv::kubectl_apply("apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata: {name: managed}\n"
                               "spec: {image: \"registry.example.com/team/web:1.4.2\"}\n",
                               "-n " + work)
            .ok());
    const std::string owner_uid = trimmed(
        testenv::kubectl_or_fail("get myresource managed -n " + work + " -o jsonpath='{.metadata.uid}'"));
    REQUIRE(testenv::kubectl_apply(stable_deployment(work, "managed", owner_uid), "-n " + work).ok());
    const auto take_over = patch_deployment(manager_token, work, "foreign",
                                            "{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
                                            "\"my-operator\"}}}");
    INFO(take_over.output);
    CHECK(take_over.output.find("HTTP 403") != std::string::npos);
    CHECK(take_over.output.find("labelled app.kubernetes.io/managed-by=my-operator before the request") !=
          std::string::npos);
    const auto delete_foreign =
        kubectl_as(manager, "delete deployment foreign -n " + work + " --dry-run=server");
    INFO(delete_foreign.output);
    CHECK_FALSE(delete_foreign.ok());
    CHECK(delete_foreign.output.find(deployments_policy) != std::string::npos);
    const auto patch_managed =
        patch_deployment(manager_token, work, "managed", "{\"spec\":{\"replicas\":3}}");
    INFO(patch_managed.output);
    CHECK(patch_managed.output.find("HTTP 200") != std::string::npos);
    const auto delete_managed =
        kubectl_as(manager, "delete deployment managed -n " + work + " --dry-run=server");
    INFO(delete_managed.output);
    CHECK(delete_managed.ok());
  }

  SECTION("the MyResource CRD: its caBundle and storedVersions only; never where conversions go") {
    const std::string other_ca =
        trimmed(testenv::run("base64 -w0 " + shell_quote(testenv::ca_path())).output);
    const auto ca_bundle = kubectl_as(
        webhook,
        "patch crd myresources.myorg.io --dry-run=server --type merge -p '{\"spec\":{\"conversion\":"
        "{\"webhook\":{\"clientConfig\":{\"caBundle\":\"" +
            other_ca + "\"}}}}}'");
    INFO(ca_bundle.output);
    CHECK(ca_bundle.ok());
    for (const auto& [what, patch] : std::vector<std::pair<std::string, std::string>>{
             {"clientConfig.url",
              "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"url\":\"https://attacker.example/"
              "convert\"}}}}}"},
             {"clientConfig.service",
              "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"url\":null,\"service\":{"
              "\"namespace\":"
              "\"attacker\",\"name\":\"webhook\",\"path\":\"/convert\",\"port\":443}}}}}}"},
             {"a label", "{\"metadata\":{\"labels\":{\"owner\":\"attacker\"}}}"},
         }) {
      const auto result = kubectl_as(
          webhook, "patch crd myresources.myorg.io --dry-run=server --type merge -p '" + patch + "'");
      INFO(what << ": " << result.output);
      CHECK_FALSE(result.ok());
      CHECK(result.output.find(crds_policy) != std::string::npos);
    }

    // The storage migration (the manager) trims status.storedVersions, and does nothing else there.
    const std::string stored = trimmed(
        testenv::kubectl_or_fail("get crd myresources.myorg.io -o jsonpath='{.status.storedVersions}'"));
    const auto trim = patch_crd_status(manager_token, "{\"status\":{\"storedVersions\":" + stored + "}}");
    INFO(trim.output);
    CHECK(trim.output.find("HTTP 200") != std::string::npos);
    const auto names = patch_crd_status(manager_token,
                                        "{\"status\":{\"acceptedNames\":{\"kind\":\"MyResource\",\"plural\":"
                                        "\"myresources\",\"shortNames\":[\"pwned\"]}}}");
    INFO(names.output);
    CHECK(names.output.find("HTTP 403") != std::string::npos);
    CHECK(names.output.find(crds_policy) != std::string::npos);
  }

  SECTION("the operator itself, under the manager's token, creates and deletes a MyResource's Deployment") {
    testing::OperatorProcess running({.user = "system:serviceaccount:" + ns + ":" + fullname,
                                      .namespaces = {work},
                                      .pod_namespace = ns,
                                      .extra_args = {},
                                      .kubeconfig = manager});
    running.start();
    REQUIRE(testenv::kubectl_apply("apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata: {name: app}\n"
                                   "spec: {image: \"registry.example.com/team/app:1.0.0\", replicas: 1}\n",
                                   "-n " + work)
                .ok());
    const bool created =
        testing::eventually([&] { return testenv::kubectl("get deployment app -n " + work).ok(); }, 60s);
    INFO(running.log_tail());
    REQUIRE(created);
    testenv::kubectl_or_fail("delete myresource app -n " + work + " --timeout=60s");
    CHECK_FALSE(testenv::kubectl("get deployment app -n " + work).ok());
    CHECK(running.log_tail(1000).find("forbidden") == std::string::npos);
  }
}
