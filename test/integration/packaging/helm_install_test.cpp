// `helm install` of the chart into the test cluster, then the API server's own authorizer
// (kubectl auth can-i, impersonating the chart's ServiceAccount and people) says the RBAC
// is exactly enough: every request the operator makes is allowed, anything more is denied,
// tenants may edit MyResources only in their namespace, and view/edit include MyResources.
#include <catch2/catch.hpp>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

bool can(const std::string& who, const std::string& request) {
  // The answer is the last line (kubectl may print warnings before it).
  const std::string output = trimmed(testenv::kubectl("auth can-i " + request + " " + who).output);
  return output.substr(output.find_last_of('\n') + 1) == "yes";
}

std::string unique_name(const std::string& prefix) {
  const auto stamp = std::chrono::system_clock::now().time_since_epoch().count() % 1000000007;
  return prefix + "-" + std::to_string(stamp % 100000);
}

}  // namespace

TEST_CASE("packaging: the installed chart's RBAC is exactly what the operator, tenants and viewers need",
          "[packaging][helm][rbac]") {
  testenv::ScopedNamespace release_namespace("pkg-helm-install");
  testenv::ScopedNamespace other_namespace("pkg-other");
  const std::string ns = release_namespace.name();
  const std::string tenant = unique_name("pkg-tenant");
  const std::string release = "pkg-install";
  const std::string values =
      " --set crds.install=false --set webhook.patchCaBundle=true --set replicaCount=1 --set "
      "tenants[0].name=" +
      tenant + " --set tenants[0].group=" + tenant + "-developers";
  // The release leaves the CRD out (crds.install=false); kubectl needs it to resolve the
  // myresources resource it asks about. The CRD installed apart names this release's webhook
  // (webhook.patchCaBundle=true): its caBundle is the release's, as in a default install.
  testenv::apply_crd();
  ReleaseGuard guard(release, ns, {tenant});
  {
    const auto installed =
        helm("install " + release + " " + shell_quote(testenv::source_dir() + "/charts/my-operator") +
             " -n " + ns + values);
    INFO(installed.output);
    REQUIRE(installed.ok());
  }
  const std::string operator_account = "--as=system:serviceaccount:" + ns + ":" + release + "-my-operator";

  SECTION("the operator may do what it does in any namespace, and no more") {
    const std::string anywhere = " -n " + other_namespace.name() + " " + operator_account;
    for (const char* verb : {"list", "watch", "patch"})
      CHECK(can(anywhere, std::string(verb) + " myresources.myorg.io"));
    CHECK(can(anywhere, "patch myresources.myorg.io --subresource=status"));
    CHECK(can(anywhere, "update myresources.myorg.io --subresource=finalizers"));
    for (const char* verb : {"list", "watch", "create", "patch", "delete"})
      CHECK(can(anywhere, std::string(verb) + " deployments.apps"));
    for (const char* verb : {"create", "patch"})
      CHECK(can(anywhere, std::string(verb) + " events.events.k8s.io"));

    // The operator reads its caches and writes patches: no get or update (hack/e2e.sh proves
    // from the audit log that it never needs them).
    for (const char* request :
         {"get myresources.myorg.io", "update myresources.myorg.io", "get deployments.apps",
          "update deployments.apps", "update myresources.myorg.io --subresource=status",
          "create myresources.myorg.io", "delete myresources.myorg.io", "get secrets", "list pods",
          "create pods", "get configmaps", "get leases.coordination.k8s.io",
          "delete deployments.apps --all-namespaces=false --subresource=scale", "create events",
          "escalate clusterroles.rbac.authorization.k8s.io", "create rolebindings.rbac.authorization.k8s.io",
          "delete customresourcedefinitions"}) {
      INFO(request);
      CHECK_FALSE(can(anywhere, request));
    }
  }

  SECTION(
      "metrics.secure (the default): the operator may ask token and access reviews, a reader may get "
      "/metrics") {
    // Cluster-scoped review APIs: the namespace does not matter.
    CHECK(can(operator_account, "create tokenreviews.authentication.k8s.io"));
    CHECK(can(operator_account, "create subjectaccessreviews.authorization.k8s.io"));
    for (const char* request :
         {"get tokenreviews.authentication.k8s.io", "list subjectaccessreviews.authorization.k8s.io",
          "create localsubjectaccessreviews.authorization.k8s.io -n default", "get /metrics",
          "get /debug/pprof/"}) {
      INFO(request);
      CHECK_FALSE(can(operator_account, request));
    }
    const std::string reader_binding = release + "-test-metrics-reader";
    testenv::kubectl("delete clusterrolebinding " + reader_binding + " --ignore-not-found");
    testenv::kubectl_or_fail("create clusterrolebinding " + reader_binding + " --clusterrole=" + release +
                             "-my-operator-metrics-reader --user=pkg-prometheus");
    const bool reads = can(" --as=pkg-prometheus", "get /metrics");
    const bool posts = can(" --as=pkg-prometheus", "post /metrics");
    const bool other_url = can(" --as=pkg-prometheus", "get /debug/pprof/");
    const bool resources = can(" --as=pkg-prometheus -n " + ns, "get pods");
    testenv::kubectl("delete clusterrolebinding " + reader_binding + " --ignore-not-found");
    CHECK(reads);
    CHECK_FALSE(posts);
    CHECK_FALSE(other_url);
    CHECK_FALSE(resources);
  }

  SECTION("in its own namespace it may also hold the Lease and read the feature flags") {
    const std::string here = " -n " + ns + " " + operator_account;
    for (const char* verb : {"get", "create", "update"})
      CHECK(can(here, std::string(verb) + " leases.coordination.k8s.io"));
    for (const char* verb : {"list", "watch"}) CHECK(can(here, std::string(verb) + " configmaps"));
    CHECK_FALSE(can(here, "delete leases.coordination.k8s.io"));
    CHECK_FALSE(can(here, "update configmaps"));
    CHECK_FALSE(can(here, "get configmaps"));
    CHECK_FALSE(can(here, "get secrets"));
  }

  SECTION(
      "the webhook Deployment: its ServiceAccount may touch its certificate Secret and the CRD's caBundle, "
      "nothing else, and its pods run at system-cluster-critical priority outside kube-system") {
    const std::string webhook_account =
        " --as=system:serviceaccount:" + ns + ":" + release + "-my-operator-webhook";
    const std::string here = " -n " + ns + webhook_account;
    const std::string secret = release + "-my-operator-webhook-cert";
    CHECK(can(here, "create secrets"));  // create cannot be limited by name
    CHECK(can(here, "get secrets/" + secret));
    CHECK(can(here, "update secrets/" + secret));
    CHECK(can(here, "get secrets/" + secret + "-ca"));  // the CA, apart from what is served
    CHECK(can(here, "update secrets/" + secret + "-ca"));
    CHECK_FALSE(can(here, "get secrets/someone-elses"));
    CHECK_FALSE(can(here, "list secrets"));
    CHECK(can(webhook_account, "get customresourcedefinitions/myresources.myorg.io"));
    CHECK(can(webhook_account, "patch customresourcedefinitions/myresources.myorg.io"));
    CHECK_FALSE(can(webhook_account, "patch customresourcedefinitions/other.example.com"));
    CHECK(can(webhook_account, "create tokenreviews.authentication.k8s.io"));
    for (const char* request :
         {"list myresources.myorg.io", "create deployments.apps", "patch deployments.apps",
          "create leases.coordination.k8s.io", "list configmaps", "create events.events.k8s.io",
          "patch customresourcedefinitions/myresources.myorg.io --subresource=status"}) {
      INFO(request);
      CHECK_FALSE(can(" -n " + other_namespace.name() + webhook_account, request));
    }
    // And the manager has none of the webhook's rights.
    CHECK_FALSE(can(" -n " + ns + " " + operator_account, "create secrets"));
    CHECK_FALSE(can(operator_account, "patch customresourcedefinitions/myresources.myorg.io"));

    // Its pods get the system-cluster-critical priority outside kube-system. The API server's Priority
    // admission resolves the class on each pod the ReplicaSet makes; a class it refused (or a quota on it)
    // would leave the Deployment without pods.
    std::string priorities;
    for (int attempt = 0; attempt < 150; ++attempt) {
      priorities = trimmed(testenv::kubectl("get pods -n " + ns +
                                            " -l app.kubernetes.io/component=webhook -o "
                                            "jsonpath='{range .items[*]}{.spec.priority} {end}'")
                               .output);
      if (priorities == "2000000000 2000000000") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    INFO(
        testenv::kubectl("describe replicasets -n " + ns + " -l app.kubernetes.io/component=webhook").output);
    CHECK(priorities == "2000000000 2000000000");
  }

  SECTION("a tenant's group edits MyResources in its namespace only, and never their status") {
    const std::string developer = " --as=dev --as-group=" + tenant + "-developers";
    CHECK(can(" -n " + tenant + developer, "create myresources.myorg.io"));
    CHECK(can(" -n " + tenant + developer, "delete myresources.myorg.io"));
    CHECK_FALSE(can(" -n " + tenant + developer, "update myresources.myorg.io --subresource=status"));
    CHECK_FALSE(can(" -n " + other_namespace.name() + developer, "create myresources.myorg.io"));
    CHECK(testenv::kubectl("get networkpolicy same-namespace-only -n " + tenant).ok());
    CHECK(testenv::kubectl("get resourcequota tenant-quota -n " + tenant).ok());
    CHECK(testenv::kubectl("get limitrange tenant-limits -n " + tenant).ok());
  }

  SECTION("the built-in view and edit roles include MyResources (aggregation)") {
    // kube-controller-manager's clusterrole-aggregation controller fills view/edit/admin;
    // without it even the built-in rules are missing and there is nothing to test.
    if (testenv::kubectl_or_fail("get clusterrole view -o jsonpath='{.rules}'").empty() ||
        testenv::kubectl_or_fail("get clusterrole view -o jsonpath='{.rules}'") == "null") {
      FAIL(
          "the control plane runs no clusterrole-aggregation controller (the view ClusterRole has no rules), "
          "so the aggregation of myresource-viewer/editor cannot be checked");
    }
    const std::string other = other_namespace.name();
    testenv::kubectl_or_fail("create rolebinding viewers --clusterrole=view --group=viewers -n " + other);
    testenv::kubectl_or_fail("create rolebinding editors --clusterrole=edit --group=editors -n " + other);
    bool aggregated = false;
    for (int attempt = 0; attempt < 50 && !aggregated; ++attempt) {
      aggregated = can(" -n " + other + " --as=v --as-group=viewers", "list myresources.myorg.io") &&
                   can(" -n " + other + " --as=e --as-group=editors", "create myresources.myorg.io");
      if (!aggregated) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(aggregated);
    CHECK_FALSE(can(" -n " + other + " --as=v --as-group=viewers", "create myresources.myorg.io"));
  }

  SECTION("helm uninstall keeps the tenant namespaces (resource policy keep)") {
    const auto uninstalled = helm("uninstall " + release + " -n " + ns + " --wait");
    INFO(uninstalled.output);
    CHECK(uninstalled.ok());
    CHECK(testenv::kubectl("get namespace " + tenant).ok());
    CHECK_FALSE(testenv::kubectl("get clusterrole " + release + "-my-operator-manager").ok());
  }
}
