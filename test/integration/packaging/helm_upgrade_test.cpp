// `helm upgrade` from the previous chart version really updates the CRD (it is a template,
// not in crds/, which Helm never upgrades), a field the new CRD adds then persists, and
// `helm uninstall` keeps the CRD (helm.sh/resource-policy: keep) and with it the objects.
//
// The previous chart is this chart with the previous version's CRD
// (fixtures/chart-0.0.1/myorg.io_myresources.yaml: no spec.paused).
#include <catch2/catch.hpp>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

const std::vector<std::string> kFixedNameObjects = {
    "customresourcedefinition/myresources.myorg.io",
    "validatingadmissionpolicy/myresources.myorg.io-annotations",
    "validatingadmissionpolicybinding/myresources.myorg.io-annotations",
};

// The CRD and the admission policy have fixed names and may already be in the shared test
// cluster (other tests apply config/crd). Hands them to the release for the test (Helm
// adopts objects that carry its ownership metadata) and gives them back afterwards: the
// repository's version applied again, without Helm's ownership metadata.
class AdoptedClusterObjects {
 public:
  AdoptedClusterObjects(const std::string& release, const std::string& namespace_name) {
    for (const std::string& object : kFixedNameObjects) {
      if (!testenv::kubectl("get " + object).ok()) continue;
      testenv::kubectl_or_fail("annotate --overwrite " + object + " meta.helm.sh/release-name=" + release +
                               " meta.helm.sh/release-namespace=" + namespace_name);
      testenv::kubectl_or_fail("label --overwrite " + object + " app.kubernetes.io/managed-by=Helm");
    }
  }
  ~AdoptedClusterObjects() {
    testenv::kubectl("apply --server-side --force-conflicts -f " + testenv::source_dir() +
                     "/config/crd/myorg.io_myresources.yaml");
    testenv::kubectl("apply -f " + testenv::source_dir() + "/config/crd/myresources-annotations-policy.yaml");
    for (const std::string& object : kFixedNameObjects) {
      testenv::kubectl("annotate " + object +
                       " meta.helm.sh/release-name- meta.helm.sh/release-namespace- helm.sh/resource-policy- "
                       "argocd.argoproj.io/sync-wave-");
      testenv::kubectl("label " + object + " app.kubernetes.io/managed-by-");
    }
  }
  AdoptedClusterObjects(const AdoptedClusterObjects&) = delete;
  AdoptedClusterObjects& operator=(const AdoptedClusterObjects&) = delete;
};

std::string paused_schema() {
  return testenv::kubectl_or_fail(
      "get crd myresources.myorg.io -o "
      "jsonpath='{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.paused.type}'");
}

std::string paused_resource(const std::string& name) {
  return "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name +
         "\nspec:\n  image: nginxinc/nginx-unprivileged:1.27.2\n  paused: true\n";
}

// The API server takes a moment to serve a changed CRD schema; retry until it does.
testenv::CommandResult apply_until_accepted(const std::string& manifest, const std::string& args) {
  testenv::CommandResult result;
  for (int attempt = 0; attempt < 50; ++attempt) {
    result = testenv::kubectl_apply(manifest, args);
    if (result.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return result;
}

}  // namespace

TEST_CASE("packaging: helm upgrade from the previous chart version updates the CRD and a new field persists",
          "[packaging][helm][upgrade]") {
  testenv::ScopedNamespace release_namespace("pkg-helm-upgrade");
  const std::string ns = release_namespace.name();
  const std::string release = "pkg-upgrade";

  // The previous chart: this chart at version 0.0.1 with that version's CRD.
  TemporaryFolder folder("myop-previous-chart");
  const auto previous_chart = folder.path() / "my-operator";
  std::filesystem::copy(testenv::source_dir() + "/charts/my-operator", previous_chart,
                        std::filesystem::copy_options::recursive);
  std::filesystem::copy_file(
      testenv::source_dir() + "/test/integration/packaging/fixtures/chart-0.0.1/myorg.io_myresources.yaml",
      previous_chart / "files/crds/myorg.io_myresources.yaml",
      std::filesystem::copy_options::overwrite_existing);
  std::string chart_yaml = read_text(previous_chart / "Chart.yaml");
  chart_yaml = std::regex_replace(chart_yaml, std::regex("\nversion: [^\n]*"), "\nversion: 0.0.1");
  write_text(previous_chart / "Chart.yaml", chart_yaml);

  AdoptedClusterObjects adopted(release, ns);
  ReleaseGuard guard(release, ns);
  const std::string common = " -n " + ns + " --set replicaCount=1 --set podDisruptionBudget.enabled=false";
  {
    const auto installed = helm("install " + release + " " + shell_quote(previous_chart.string()) + common);
    INFO(installed.output);
    REQUIRE(installed.ok());
  }
  CHECK(paused_schema().empty());
  {
    // The previous CRD does not know spec.paused: strict validation refuses it.
    const auto refused =
        testenv::kubectl_apply(paused_resource("before-upgrade"), "-n " + ns + " --validate=strict");
    INFO(refused.output);
    CHECK_FALSE(refused.ok());
    CHECK(refused.output.find("paused") != std::string::npos);
  }

  {
    const auto upgraded = helm("upgrade " + release + " " +
                               shell_quote(testenv::source_dir() + "/charts/my-operator") + common);
    INFO(upgraded.output);
    REQUIRE(upgraded.ok());
  }
  CHECK(paused_schema() == "boolean");
  CHECK(testenv::kubectl_or_fail(
            "get crd myresources.myorg.io -o jsonpath='{.metadata.annotations.helm\\.sh/resource-policy}'") ==
        "keep");
  const auto history = helm("history " + release + " -n " + ns + " -o yaml");
  CHECK(history.output.find("my-operator-0.0.1") != std::string::npos);
  CHECK(history.output.find("my-operator-0.1.0") != std::string::npos);

  {
    const auto accepted =
        apply_until_accepted(paused_resource("after-upgrade"), "-n " + ns + " --validate=strict");
    INFO(accepted.output);
    REQUIRE(accepted.ok());
  }
  CHECK(testenv::kubectl_or_fail("get myresource after-upgrade -n " + ns + " -o jsonpath='{.spec.paused}'") ==
        "true");

  {
    const auto uninstalled = helm("uninstall " + release + " -n " + ns + " --wait");
    INFO(uninstalled.output);
    CHECK(uninstalled.ok());
  }
  // keep: the CRD, and so the user's objects, survive the uninstall.
  CHECK(testenv::kubectl("get crd myresources.myorg.io").ok());
  CHECK(testenv::kubectl_or_fail("get myresource after-upgrade -n " + ns + " -o jsonpath='{.spec.paused}'") ==
        "true");
  CHECK_FALSE(testenv::kubectl("get clusterrole " + release + "-my-operator-manager").ok());
}
