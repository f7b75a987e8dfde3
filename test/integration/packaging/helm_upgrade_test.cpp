// `helm upgrade` from the previous release (chart 0.0.1: v1alpha1 stored, no conversion; its operator
// built from the repository's history by hack/previous-release.sh) to this one (v1beta1 stored,
// converted by the webhook) with 500 MyResources: no Deployment written, the storage migration, writes
// of v1alpha1 afterwards, the way back with crds.install=false and the previous operator, and `helm
// rollback` with v1beta1 objects stored (docs/crd-upgrades.md). The CRD is a template, not in crds/,
// which Helm never upgrades.
//
// The previous chart is this chart with the previous version's CRD
// (fixtures/chart-0.0.1/myorg.io_myresources.yaml). It replaces the CRD, so it runs on the control
// plane of the [conversion] cases, in a ctest entry of its own after the previous operator's build
// (test/CMakeLists.txt): hidden from the lanes' discovery.
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
    "validatingadmissionpolicy/myresources.myorg.io-canary-annotations",
    "validatingadmissionpolicybinding/myresources.myorg.io-canary-annotations",
    "validatingadmissionpolicy/myresources.myorg.io-canary-annotations-ignored",
    "validatingadmissionpolicybinding/myresources.myorg.io-canary-annotations-ignored",
};

// The CRD and the admission policies have fixed names and may already be in the shared test
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

// The previous release's operator, built from the repository's history (hack/previous-release.sh;
// the ctest fixture previous_release builds it before this case runs, so this finds it).
std::string previous_operator_binary() {
  const auto built = testenv::run(testenv::source_dir() + "/hack/previous-release.sh --print-binary");
  INFO(built.output);
  REQUIRE(built.ok());
  const std::string output = trimmed(built.output);
  const std::string path = output.substr(output.rfind('\n') + 1);  // after the build's progress, if any
  REQUIRE(std::filesystem::exists(path));
  return path;
}

// A field of each Deployment of `namespace_` by name, e.g. {.metadata.resourceVersion}: equal
// resourceVersions before and after mean nobody wrote one, an equal generation that its spec (and so
// its pods) did not change.
std::map<std::string, std::string> deployment_fields(const std::string& namespace_,
                                                     const std::string& field) {
  std::map<std::string, std::string> values;
  std::istringstream lines(testenv::kubectl_or_fail("get deployments -n " + namespace_ +
                                                    " -o jsonpath='{range .items[*]}{.metadata.name} " +
                                                    field + R"({"\n"}{end}')"));
  for (std::string name, value; lines >> name >> value;) values[name] = value;
  return values;
}

// The names whose value in `after` is not the one in `before` (or is missing), of those in `before`.
std::vector<std::string> changed(const std::map<std::string, std::string>& before,
                                 const std::map<std::string, std::string>& after) {
  std::vector<std::string> names;
  for (const auto& [name, value] : before) {
    const auto found = after.find(name);
    if (found == after.end() || found->second != value) names.push_back(name);
  }
  return names;
}

// The operator has reconciled at least `count` times and has nothing queued: it has been through every
// object it listed at its start.
bool settled(const OperatorProcess& process, std::size_t count) {
  const std::string metrics = process.metrics();
  return metric_sum(metrics, "controller_runtime_reconcile_total", "controller=\"myresource\"") >=
             static_cast<double>(count) &&
         metric_sum(metrics, "workqueue_depth", "name=\"myresource\"") == 0;
}

// `user`'s writes of Deployments in `namespace_` after `mark`, each described.
std::vector<std::string> deployment_writes_in_namespace(const std::string& user, std::size_t mark,
                                                        const std::string& namespace_) {
  std::vector<std::string> writes;
  for (const auto& write : audit_writes(user, mark))
    if (write.resource == "deployments" && write.namespace_ == namespace_) writes.push_back(write.describe());
  return writes;
}

}  // namespace

TEST_CASE(
    "packaging: helm upgrade from chart 0.0.1 and its operator to this release with 500 MyResources: no "
    "Deployment written, stored as v1beta1 after the migration, v1alpha1 still works, the previous operator "
    "runs again on this CRD, and helm rollback hides the moved fields until the next upgrade",
    "[packaging][helm][upgrade][.previous-release]") {
  if (!testenv::owns_control_plane())
    FAIL("needs a control plane of its own: it replaces the MyResource CRD");
  constexpr int kObjects = 500;
  constexpr int kDeployments = kObjects + kObjects / 10;  // a canary Deployment for every tenth
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
  // The release's webhook would run in a kwok pod: the CRD calls the fixture's (webhook.url). The
  // operators run as processes (kwok cannot run their image) with the chart's RBAC (config/rbac's).
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
  const std::string alpha = "myresources.v1alpha1.myorg.io ";
  const std::string beta = "myresources.v1beta1.myorg.io ";
  const std::string in_objects = " -n " + objects.name();
  auto ready = [&] {
    return count_lines(
        testenv::kubectl(
            "get " + alpha + in_objects +
            R"( -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')")
            .output,
        "True");
  };

  // The previous release's operator rolls them out, as it ran them before the upgrade.
  OperatorOptions previous_options;
  previous_options.user = "myop-previous-" + ns;
  previous_options.pod_namespace = ns;
  previous_options.binary = previous_operator_binary();
  OperatorProcess previous_operator(previous_options);
  previous_operator.start();
  {
    INFO("previous operator's log:\n" << previous_operator.log_tail(40));
    REQUIRE(eventually([&] { return ready() == kObjects; }, 300s));
    REQUIRE(eventually([&] { return settled(previous_operator, kObjects); }, 60s));
  }
  previous_operator.stop();
  const std::string kResourceVersion = "{.metadata.resourceVersion}";
  const auto rolled_out = deployment_fields(objects.name(), kResourceVersion);
  CHECK(rolled_out.size() == kDeployments);
  CHECK(read("deployment app-10" + in_objects, "{.metadata.ownerReferences[0].apiVersion}") ==
        "myorg.io/v1alpha1");

  const auto upgrade_mark = audit_mark();
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
  auto served_in_both = [&] {
    return count_lines(testenv::kubectl("get " + alpha + in_objects + " -o name").output) == kObjects &&
           count_lines(testenv::kubectl("get " + beta + in_objects + " -o name").output) == kObjects;
  };
  CHECK(eventually(served_in_both, 30s));
  CHECK(read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.2");
  CHECK(read(alpha + "app-10" + in_objects, "{.spec}") == R"({"image":"nginx:1.27.1","replicas":1})");
  CHECK(read(beta + "app-10" + in_objects, "{.spec.canary.enabled}") == "true");
  CHECK(read(beta + "app-10" + in_objects, "{.spec.canary.targetVersion}") == "1.27.2");

  // The operator of this release, watching every namespace as the chart runs it: it goes through every
  // object, writes none of their Deployments, and migrates what is stored as v1alpha1.
  OperatorOptions options;
  options.user = "myop-upgrade-" + ns;
  options.pod_namespace = ns;
  OperatorProcess operator_process(options);
  operator_process.start();
  const auto started = std::chrono::steady_clock::now();
  {
    INFO("operator log:\n" << operator_process.log_tail(40));
    REQUIRE(eventually([&] { return crd_field("{.status.storedVersions}") == R"(["v1beta1"])"; }, 240s));
  }
  const double migrated = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(eventually([&] { return settled(operator_process, kObjects); }, 120s));
  const double went_through =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(stored_api_versions(objects.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects}});
  CHECK(ready() == kObjects);
  std::size_t myresource_writes = 0;
  for (const auto& write : audit_writes(options.user, upgrade_mark))
    myresource_writes += write.resource == "myresources" && write.namespace_ == objects.name();
  {
    const auto writes = deployment_writes_in_namespace(options.user, upgrade_mark, objects.name());
    INFO(describe(writes));
    CHECK(writes.empty());
  }
  CHECK(changed(rolled_out, deployment_fields(objects.name(), kResourceVersion)).empty());
  const std::size_t upgrade_deployment_writes =
      deployment_writes_in_namespace(options.user, upgrade_mark, objects.name()).size();
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
  WARN("helm upgrade of " << kObjects << " MyResources from the previous release's operator: storedVersions "
                          << "[v1beta1] " << migrated << " s after this release's operator started, every "
                          << "object reconciled after " << went_through << " s; " << myresource_writes
                          << " MyResource writes, " << upgrade_deployment_writes << " Deployment writes");

  // The safe way back (docs/crd-upgrades.md): the previous chart with crds.install=false leaves this
  // CRD as it is (v1beta1 stored, converted by the webhook), and the previous operator reads its
  // v1alpha1 through the webhook: every canary is still there, and no Deployment is written but the
  // owner reference of the two this release created ("late"), which names v1beta1 and which the
  // previous operator, knowing v1alpha1 only, sets to its own version: a patch of metadata, no
  // rollout (their generation stays).
  const auto generations = deployment_fields(objects.name(), "{.metadata.generation}");
  CHECK(read("deployment late" + in_objects, "{.metadata.ownerReferences[0].apiVersion}") ==
        "myorg.io/v1beta1");
  {
    const auto back = helm("upgrade " + release + " " + shell_quote(previous_chart.string()) + common +
                           " --set crds.install=false");
    INFO(back.output);
    REQUIRE(back.ok());
  }
  CHECK(crd_field("{.spec.versions[?(@.storage==true)].name}") == "v1beta1");
  CHECK(crd_field("{.spec.conversion.strategy}") == "Webhook");
  const auto back_mark = audit_mark();
  previous_operator.start();
  {
    INFO("previous operator's log:\n" << previous_operator.log_tail(40));
    CHECK(eventually([&] { return settled(previous_operator, kObjects + 1); }, 120s));
  }
  std::vector<std::string> previous_writes;
  for (const auto& write : audit_writes(previous_options.user, back_mark)) {
    if (write.resource != "deployments" || write.namespace_ != objects.name()) continue;
    if (write.verb == "patch" && (write.name == "late" || write.name == "late-canary")) continue;
    previous_writes.push_back(write.describe());
  }
  CHECK(previous_writes.empty());
  CHECK(changed(rolled_out, deployment_fields(objects.name(), kResourceVersion)).empty());
  CHECK(changed(generations, deployment_fields(objects.name(), "{.metadata.generation}")).empty());
  CHECK(read("deployment late" + in_objects, "{.metadata.ownerReferences[0].apiVersion}") ==
        "myorg.io/v1alpha1");
  CHECK(read(alpha + "app-10" + in_objects, "{.metadata.annotations.myorg\\.io/canary}") == "true");
  CHECK(crd_field("{.status.storedVersions}") == R"(["v1beta1"])");
  CHECK(stored_api_versions(objects.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects + 1}});
  previous_operator.stop();
  {
    const auto upgraded = helm("upgrade " + release + " " + current_chart + common);
    INFO(upgraded.output);
    REQUIRE(upgraded.ok());
  }

  // helm rollback to the first revision with every object stored as v1beta1: the API server takes the
  // previous CRD (it still lists v1beta1, unserved), which has no conversion webhook. v1alpha1 reads of
  // v1beta1 objects then only get their apiVersion rewritten, and v1alpha1's schema prunes the moved
  // fields from the view: the canary is gone from what the previous operator would read. etcd still
  // holds them.
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

  // The objects go while the operator runs, so their finalizers are removed.
  operator_process.start();
  testenv::kubectl("delete " + beta + "--all" + in_objects + " --wait=false");
  CHECK(eventually([&] { return stored_api_versions(objects.name()).empty(); }, 180s));
}
