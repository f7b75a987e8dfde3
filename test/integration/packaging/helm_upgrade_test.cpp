// `helm upgrade` from the previous chart version (v1alpha1 stored, no conversion) to this one (v1beta1
// stored, converted by the webhook) with 500 MyResources, the storage migration after it, writes of
// v1alpha1 afterwards, and `helm rollback` with v1beta1 objects stored (docs/crd-upgrades.md). The
// CRD is a template, not in crds/, which Helm never upgrades.
//
// The previous chart is this chart with the previous version's CRD
// (fixtures/chart-0.0.1/myorg.io_myresources.yaml). A [conversion] case: it replaces the CRD, so it
// runs on the control plane of those cases.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "myresource/operator_process.h"
#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;
using namespace myop::testing;
using namespace std::chrono_literals;

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
    // The run's CRD again (testenv::crd_manifest: the fixture's webhook), never FAILing here.
    testenv::kubectl("apply --server-side --force-conflicts -f " + testenv::crd_manifest());
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

const std::string kCrd = "crd myresources.myorg.io";

std::string crd_field(const std::string& path) {
  const auto result = testenv::kubectl("get " + kCrd + " -o jsonpath='" + path + "'");
  return result.ok() ? result.output : "(error) " + result.output;
}

// `kubectl get <what> -o jsonpath=<path>`, or "(error) ..." when kubectl fails.
std::string read(const std::string& what, const std::string& path) {
  const auto result = testenv::kubectl("get " + what + " -o jsonpath='" + path + "'");
  return result.ok() ? result.output : "(error) " + result.output;
}

std::size_t count_lines(const std::string& text, const std::string& equal_to = "") {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    count += equal_to.empty() ? !line.empty() : line == equal_to;
  return count;
}

// The MyResource CRD gone, as on a cluster the previous chart is installed on first: what earlier
// cases left loses its finalizers (no operator runs to remove them), then the CRD is deleted.
void remove_myresource_crd() {
  if (!testenv::kubectl("get " + kCrd).ok()) return;
  testenv::apply_crd();  // the fixture's webhook converts whatever is stored
  const auto left = testenv::kubectl_or_fail(
      R"(get myresources.v1beta1.myorg.io -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}')");
  std::istringstream lines(left);
  for (std::string ns, name; lines >> ns >> name;)
    testenv::kubectl("patch myresources.v1beta1.myorg.io " + name + " -n " + ns +
                     R"( --type=merge -p '{"metadata":{"finalizers":null}}')");
  testenv::kubectl_or_fail("delete " + kCrd + " --timeout=120s");
}

}  // namespace

TEST_CASE(
    "packaging: helm upgrade from chart 0.0.1 stores 500 MyResources as v1beta1 after the migration, "
    "v1alpha1 still works, and helm rollback hides the moved fields until the next upgrade",
    "[packaging][helm][upgrade][conversion]") {
  if (!testenv::owns_control_plane())
    FAIL("needs a control plane of its own: it replaces the MyResource CRD");
  constexpr int kObjects = 500;
  testenv::ScopedNamespace release_namespace("pkg-helm-upgrade");
  testenv::ScopedNamespace objects("pkg-upgrade-objects");
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
  const std::string current_chart = shell_quote(testenv::source_dir() + "/charts/my-operator");

  remove_myresource_crd();
  AdoptedClusterObjects adopted(release, ns);
  ReleaseGuard guard(release, ns);
  // The release's webhook would run in a kwok pod: the CRD calls the fixture's (webhook.url).
  const std::string common = " -n " + ns + " --set replicaCount=0 --set podDisruptionBudget.enabled=false" +
                             " --set webhook.url=" + testenv::webhook_url() +
                             " --set webhook.caBundle=" + testenv::webhook_ca_bundle();
  {
    const auto installed = helm("install " + release + " " + shell_quote(previous_chart.string()) + common);
    INFO(installed.output);
    REQUIRE(installed.ok());
  }
  testenv::kubectl_or_fail("wait --for=condition=Established " + kCrd + " --timeout=60s");
  CHECK(crd_field("{.spec.versions[?(@.served==true)].name}") == "v1alpha1");
  CHECK(crd_field("{.spec.versions[?(@.storage==true)].name}") == "v1alpha1");

  {
    const auto created = testenv::kubectl_apply(v1alpha1_fleet_manifest(objects.name(), kObjects));
    INFO(created.output.substr(0, 2000));
    REQUIRE(created.ok());
  }
  CHECK(stored_api_versions(objects.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1alpha1", kObjects}});

  {
    const auto upgraded = helm("upgrade " + release + " " + current_chart + common);
    INFO(upgraded.output);
    REQUIRE(upgraded.ok());
  }
  testenv::kubectl_or_fail("wait --for=condition=Established " + kCrd + " --timeout=60s");
  CHECK(crd_field("{.spec.versions[?(@.served==true)].name}") == "v1alpha1 v1beta1");
  CHECK(crd_field("{.spec.versions[?(@.storage==true)].name}") == "v1beta1");
  CHECK(crd_field("{.spec.conversion.strategy}") == "Webhook");
  CHECK(crd_field("{.status.storedVersions}") == R"(["v1alpha1","v1beta1"])");
  const std::string alpha = "myresources.v1alpha1.myorg.io ";
  const std::string beta = "myresources.v1beta1.myorg.io ";
  const std::string in_objects = " -n " + objects.name();
  auto served_in_both = [&] {
    return count_lines(testenv::kubectl("get " + alpha + in_objects + " -o name").output) == kObjects &&
           count_lines(testenv::kubectl("get " + beta + in_objects + " -o name").output) == kObjects;
  };
  CHECK(eventually(served_in_both, 30s));
  CHECK(read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.2");
  CHECK(read(alpha + "app-10" + in_objects, "{.spec}") == R"({"image":"nginx:1.27.1","replicas":1})");
  CHECK(read(beta + "app-10" + in_objects, "{.spec.canary.enabled}") == "true");
  CHECK(read(beta + "app-10" + in_objects, "{.spec.canary.targetVersion}") == "1.27.2");

  // The operator of this release, watching every namespace as the chart runs it: it rolls every
  // object out and migrates what is stored as v1alpha1.
  OperatorOptions options;
  options.user = "myop-upgrade-" + ns;
  options.pod_namespace = ns;
  OperatorProcess operator_process(options);
  operator_process.start();
  const auto started = std::chrono::steady_clock::now();
  INFO("operator log:\n" << operator_process.log_tail(40));
  REQUIRE(eventually([&] { return crd_field("{.status.storedVersions}") == R"(["v1beta1"])"; }, 240s));
  const double migrated = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(stored_api_versions(objects.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects}});
  auto ready = [&] {
    return count_lines(
        testenv::kubectl(
            "get " + alpha + in_objects +
            R"( -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')")
            .output,
        "True");
  };
  REQUIRE(eventually([&] { return ready() == kObjects; }, 300s));
  const double all_ready = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(count_lines(testenv::kubectl("get deployments" + in_objects + " -o name").output) ==
        kObjects + kObjects / 10);
  CHECK(read(alpha + "app-10" + in_objects, "{.spec}") == R"({"image":"nginx:1.27.1","replicas":1})");
  CHECK(read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/canary}") == "true");

  // An old Git tree (or Argo CD syncing one) still writes v1alpha1: accepted, rolled out, and read back
  // as it was written.
  {
    const auto applied = testenv::kubectl_apply(
        "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: late\n  namespace: " +
        objects.name() +
        "\n  annotations:\n    myorg.io/canary: \"true\"\n    myorg.io/targetVersion: \"1.27.3\"\n"
        "spec:\n  image: nginx:1.27.1\n  replicas: 2\n");
    INFO(applied.output);
    REQUIRE(applied.ok());
  }
  CHECK(eventually([&] { return testenv::kubectl("get deployment late-canary" + in_objects).ok(); }, 60s));
  CHECK(read(alpha + "late" + in_objects, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.3");
  CHECK(read(alpha + "late" + in_objects, "{.spec}") == R"({"image":"nginx:1.27.1","replicas":2})");
  CHECK(read(beta + "late" + in_objects, "{.spec.canary.targetVersion}") == "1.27.3");
  operator_process.stop();

  // helm rollback with every object stored as v1beta1: the API server takes the previous CRD (it still
  // lists v1beta1, unserved), which has no conversion webhook. v1alpha1 reads of v1beta1 objects then
  // only get their apiVersion rewritten, and v1alpha1's schema prunes the moved fields from the view:
  // the canary is gone from what the previous operator would read. etcd still holds them.
  {
    const auto rolled_back = helm("rollback " + release + " 1 -n " + ns + " --wait");
    INFO(rolled_back.output);
    REQUIRE(rolled_back.ok());
  }
  CHECK(crd_field("{.spec.versions[?(@.storage==true)].name}") == "v1alpha1");
  CHECK(crd_field("{.spec.versions[?(@.served==true)].name}") == "v1alpha1");
  CHECK(crd_field("{.spec.conversion.strategy}") == "None");
  CHECK(eventually(
      [&] {
        return read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/canary}").empty();
      },
      30s));
  CHECK(read(alpha + "app-10" + in_objects, "{.spec.image}") == "nginx:1.27.1");
  CHECK(stored_api_versions(objects.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects + 1}});

  // Forward again before anything writes them: the webhook converts, and the canary is back.
  {
    const auto upgraded = helm("upgrade " + release + " " + current_chart + common);
    INFO(upgraded.output);
    REQUIRE(upgraded.ok());
  }
  CHECK(eventually(
      [&] {
        return read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/canary}") == "true";
      },
      30s));
  CHECK(read(beta + "late" + in_objects, "{.spec.canary.targetVersion}") == "1.27.3");
  WARN("helm upgrade of " << kObjects << " MyResources: storedVersions [v1beta1] " << migrated
                          << " s after the operator started, all Ready after " << all_ready << " s");

  // The objects go while the operator runs, so their finalizers are removed.
  operator_process.start();
  testenv::kubectl("delete " + beta + "--all" + in_objects + " --wait=false");
  CHECK(eventually([&] { return stored_api_versions(objects.name()).empty(); }, 180s));
}
