// Smoke tests that prove the control plane under the integration tests is real:
// Deployments become Available (kube-controller-manager, kube-scheduler, kwok), the
// garbage collector deletes dependents, CRDs with a status subresource work, and RBAC
// denies a user without rights. Kept as regression tests for hack/testenv.
#include <catch2/catch.hpp>

#include "support/testenv.h"

using namespace myop::testenv;

namespace {

bool eventually(const std::string& kubectl_args, const std::string& expected, int seconds) {
  for (int attempt = 0; attempt < seconds * 5; ++attempt) {
    CommandResult result = kubectl(kubectl_args);
    if (result.ok() && result.output.find(expected) != std::string::npos) return true;
    run("sleep 0.2");
  }
  return false;
}

}  // namespace

TEST_CASE("a Deployment applied with kubectl becomes Available with Ready pods", "[controlplane]") {
  ScopedNamespace ns("smoke-deploy");
  CommandResult applied = kubectl_apply(R"(
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0
)",
                                        "-n " + ns.name());
  REQUIRE(applied.ok());
  CommandResult waited =
      kubectl("wait --for=condition=Available deployment/web --timeout=120s -n " + ns.name());
  INFO(waited.output);
  REQUIRE(waited.ok());
  CHECK(kubectl_or_fail("get deployment web -n " + ns.name() + " -o jsonpath='{.status.readyReplicas}'") ==
        "3");
  const std::string phases =
      kubectl_or_fail("get pods -n " + ns.name() + " -o jsonpath='{.items[*].status.phase}'");
  CHECK(phases == "Running Running Running");
}

TEST_CASE("deleting an owner makes the garbage collector delete what it owns", "[controlplane]") {
  ScopedNamespace ns("smoke-gc");
  kubectl_or_fail("create configmap owner -n " + ns.name());
  const std::string uid =
      kubectl_or_fail("get configmap owner -n " + ns.name() + " -o jsonpath='{.metadata.uid}'");
  REQUIRE_FALSE(uid.empty());
  REQUIRE(kubectl_apply(R"(
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: )" +
                            uid + R"(}
)",
                        "-n " + ns.name())
              .ok());
  kubectl_or_fail("delete configmap owner -n " + ns.name());
  // The dependent goes only through the garbage collector in kube-controller-manager.
  bool gone = false;
  for (int attempt = 0; attempt < 300 && !gone; ++attempt) {
    gone = kubectl("get configmap dependent -n " + ns.name()).output.find("NotFound") != std::string::npos;
    if (!gone) run("sleep 0.2");
  }
  CHECK(gone);
}

TEST_CASE("a CRD is installed and a custom resource is created with its status subresource",
          "[controlplane]") {
  ScopedNamespace ns("smoke-crd");
  REQUIRE(kubectl_apply(R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.myorg.io
spec:
  group: smoke.myorg.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {phase: {type: string}}}
)")
              .ok());
  REQUIRE(kubectl("wait --for=condition=Established crd/widgets.smoke.myorg.io --timeout=60s").ok());
  REQUIRE(eventually("api-resources --api-group=smoke.myorg.io", "widgets", 30));
  REQUIRE(kubectl_apply("apiVersion: smoke.myorg.io/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n",
                        "-n " + ns.name())
              .ok());
  // With the status subresource, status is written only through /status.
  CommandResult patched =
      kubectl("patch widget w -n " + ns.name() +
              " --subresource=status --type=merge -p '{\"status\":{\"phase\":\"Ready\"}}'");
  INFO(patched.output);
  REQUIRE(patched.ok());
  CHECK(kubectl_or_fail("get widget w -n " + ns.name() + " -o jsonpath='{.status.phase}'") == "Ready");
  kubectl_or_fail("patch widget w -n " + ns.name() +
                  " --type=merge -p '{\"status\":{\"phase\":\"Ignored\"}}'");
  CHECK(kubectl_or_fail("get widget w -n " + ns.name() + " -o jsonpath='{.status.phase}'") == "Ready");
  CHECK(kubectl_or_fail("get widget w -n " + ns.name() + " -o jsonpath='{.metadata.generation}'") == "1");
  kubectl("delete crd widgets.smoke.myorg.io --wait=false");
}

TEST_CASE("RBAC denies a user without rights", "[controlplane]") {
  const std::string kubeconfig = kubeconfig_for_user("smoke-nobody");
  CommandResult denied = run("kubectl --kubeconfig " + kubeconfig + " get pods -n default");
  INFO(denied.output);
  CHECK_FALSE(denied.ok());
  CHECK(denied.output.find("forbidden") != std::string::npos);
  CHECK(denied.output.find("smoke-nobody") != std::string::npos);
  // The same request with the admin credentials is allowed: the denial is RBAC's.
  CHECK(kubectl("get pods -n default").ok());
}
