// A real Argo CD (hack/argocd-env: repo server, application controller and ApplicationSet
// controller of the pinned version) syncs my-operator from git with the shipped config/argocd
// manifests, and judges MyResources with the shipped Lua. The operator runs as a process under
// the chart's ServiceAccount. The tests are hidden ([.argocd-env]): they need the argocd-env
// fixture of test/CMakeLists.txt on top of the control plane.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "argocd/argocd_support.h"

using namespace myop;
using namespace myop::argocd_testing;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::string stable_image(const std::string& name) {
  return jsonpath("deployment", "team-a", name, "{.spec.template.spec.containers[0].image}");
}

std::string myresource(const std::string& name, const std::string& image, const std::string& annotations = "",
                       const std::string& extra_spec = "") {
  std::string text = "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name + "\n";
  if (!annotations.empty()) text += "  annotations:\n" + annotations;
  return text + "spec:\n  image: " + image + "\n  replicas: 1\n" + extra_spec;
}

// The same in v1beta1, the storage version, as a Git tree written for this release has it: the canary
// is spec.canary.enabled and spec.canary.targetVersion.
std::string myresource_v1beta1(const std::string& name, const std::string& image,
                               const std::string& canary_target = "") {
  std::string text = "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: " + name +
                     "\nspec:\n  image: " + image + "\n  replicas: 1\n";
  if (!canary_target.empty())
    text += "  canary:\n    enabled: true\n    targetVersion: \"" + canary_target + "\"\n";
  return text;
}

std::string canary(const std::string& target) {
  return "    myorg.io/canary: \"true\"\n    myorg.io/targetVersion: \"" + target + "\"\n";
}

// Waits until the tenant Application has synced `revision` and Argo CD shows `name` with `health`.
void wait_for_resource_health(const std::string& revision, const std::string& name, const std::string& health,
                              std::chrono::seconds timeout) {
  refresh(kTenantApplication);
  INFO("waiting for " << name << " to be " << health << " at " << revision << ":\n"
                      << describe_application(kTenantApplication));
  REQUIRE(eventually(
      [&] {
        return current_revision(kTenantApplication) == revision &&
               sync_status(kTenantApplication) == "Synced" &&
               resource_health(kTenantApplication, name) == health;
      },
      timeout));
}

// Removes a tenant file from git at the end of a test (Argo CD prunes the MyResource).
class CommittedFile {
 public:
  explicit CommittedFile(std::string path) : path_(std::move(path)) {}
  ~CommittedFile() {
    try {
      commit_to_apps("remove " + path_, "git rm -q --ignore-unmatch " + shell_quoted(path_));
      refresh(kTenantApplication);
    } catch (...) {
    }
  }
  CommittedFile(const CommittedFile&) = delete;
  CommittedFile& operator=(const CommittedFile&) = delete;

 private:
  std::string path_;
};

// The operator, running as the chart installs it (once Argo CD has installed the chart).
struct RunningOperator {
  explicit RunningOperator(const std::string& user) : process(chart_operator_options(user)) {
    process.start();
  }
  OperatorProcess process;
};

}  // namespace

TEST_CASE(
    "argocd: the operator's Application is Synced and Healthy, and the tenants' MyResources are Healthy "
    "through the shipped Lua",
    "[.argocd-env][argocd]") {
  const auto started = std::chrono::steady_clock::now();
  RunningOperator running("argocd-healthy");
  const std::string revision = current_revision(kTenantApplication);
  {
    INFO(describe_application(kTenantApplication));
    REQUIRE(eventually([] { return synced_and_healthy(kTenantApplication); }, 300s));
  }
  // tenants/team-a/web.yaml of hack/argocd-env, judged by the Lua from the operator's conditions.
  CHECK(resource_health(kTenantApplication, "web") == "Healthy");
  CHECK(myresource_ready("team-a", "web"));
  CHECK(synced_and_healthy("my-operator"));
  CHECK(synced_and_healthy("my-operator-root"));
  WARN("Synced and Healthy after "
       << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()
       << " s");
  (void)revision;
}

TEST_CASE("argocd: 90 s of operator activity leave the Applications Synced, with no sync operation",
          "[.argocd-env][argocd][slow]") {
  RunningOperator running("argocd-steady");
  CommittedFile file("tenants/team-a/steady.yaml");
  // A canary that runs for the whole 90 s: status writes, events and a second Deployment.
  const std::string revision = commit_file(
      "tenants/team-a/steady.yaml",
      myresource("steady", "registry.example.com/team-a/steady:v1", canary("v2")), "steady: canary");
  wait_for_resource_health(revision, "steady", "Healthy", 180s);
  REQUIRE(eventually([] { return condition_reason("team-a", "steady", "Canary") == "CanaryRunning"; }, 60s));

  const std::vector<std::string> applications = {"my-operator", kTenantApplication, "my-operator-root"};
  std::map<std::string, std::string> first_operation;
  for (const auto& application : applications)
    first_operation[application] = application_field(application, "{.status.operationState.startedAt}");
  // Two witnesses: a self-heal can undo a diff between two samples, so OutOfSync alone may miss
  // it; the sync operation it starts (operationState.startedAt) is never missed.
  std::map<std::string, int> out_of_sync_samples;
  std::map<std::string, std::set<std::string>> operations;
  std::set<std::string> versions_seen;  // of the MyResource: only the operator's status writes change it
  int restarts = 0;
  // 90 s: nine of Argo CD's periodic reconciliations (ARGOCD_RECONCILIATION_TIMEOUT=10s in
  // hack/argocd-env), each of which compares the live objects with Git, and a pod deletion every
  // ~15 s (each sample takes ~3 s). Five minutes (the figure until 6 December) proved nothing more
  // and was the last case of the run's longer lane.
  const auto end = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < end) {
    // Operator activity: a pod of each Deployment goes away now and then (status writes, events).
    if (++restarts % 5 == 0)
      testenv::kubectl("delete pod -n team-a -l myorg.io/myresource=steady --wait=false");
    versions_seen.insert(jsonpath("myresource", "team-a", "steady", "{.metadata.resourceVersion}"));
    for (const auto& application : applications) {
      if (sync_status(application) == "OutOfSync") ++out_of_sync_samples[application];
      const std::string operation = application_field(application, "{.status.operationState.startedAt}");
      if (operation != first_operation[application]) operations[application].insert(operation);
    }
    std::this_thread::sleep_for(2s);
  }
  // Witness that the operator was busy meanwhile: it rewrote the MyResource's status again and again.
  CHECK(versions_seen.size() >= 4);
  CHECK(has_event("team-a", "MyResource", "steady", "Normal", "CanaryRunning"));
  for (const auto& application : applications) {
    INFO(application << ": " << describe_application(application));
    CHECK(out_of_sync_samples[application] == 0);
    CHECK(operations[application].empty());
    CHECK(sync_status(application) == "Synced");
  }
}

// In v1beta1; the other cases commit v1alpha1, as a Git tree from before it has.
TEST_CASE("argocd: a commit of v1beta1 starts a canary, a commit promotes it, and git revert goes back",
          "[.argocd-env][argocd]") {
  const auto started = std::chrono::steady_clock::now();
  RunningOperator running("argocd-canary");
  CommittedFile file("tenants/team-a/shop.yaml");
  const std::string path = "tenants/team-a/shop.yaml";
  std::string revision =
      commit_file(path, myresource_v1beta1("shop", "registry.example.com/team-a/shop:v1"), "shop v1");
  wait_for_resource_health(revision, "shop", "Healthy", 180s);
  REQUIRE(stable_image("shop") == "registry.example.com/team-a/shop:v1");

  revision = commit_file(path, myresource_v1beta1("shop", "registry.example.com/team-a/shop:v1", "v2"),
                         "shop: canary v2");
  wait_for_resource_health(revision, "shop", "Healthy", 120s);
  REQUIRE(eventually(
      [] {
        return condition_reason("team-a", "shop", "Canary") == "CanaryRunning" &&
               deployment_rolled("team-a", "shop-canary", "registry.example.com/team-a/shop:v2");
      },
      120s));
  CHECK(stable_image("shop") == "registry.example.com/team-a/shop:v1");

  const std::string promoted = commit_file(
      path, myresource_v1beta1("shop", "registry.example.com/team-a/shop:v2", "v2"), "shop: promote v2");
  wait_for_resource_health(promoted, "shop", "Healthy", 120s);
  REQUIRE(eventually(
      [] {
        return condition_reason("team-a", "shop", "Canary") == "CanaryPromoted" &&
               deployment_rolled("team-a", "shop", "registry.example.com/team-a/shop:v2") &&
               deployment_gone("team-a", "shop-canary");
      },
      120s));

  // Rollback from Git history: revert the promotion.
  const std::string reverted = commit_to_apps("revert", "git revert --no-edit HEAD");
  wait_for_resource_health(reverted, "shop", "Healthy", 120s);
  REQUIRE(eventually(
      [] {
        return deployment_rolled("team-a", "shop", "registry.example.com/team-a/shop:v1") &&
               condition_reason("team-a", "shop", "Canary") == "CanaryRunning";
      },
      120s));
  WARN("canary, promotion and revert through Argo CD in "
       << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()
       << " s");
}

TEST_CASE(
    "argocd: a MyResource whose image cannot be pulled shows Degraded, for the canary and for the stable "
    "Deployment",
    "[.argocd-env][argocd]") {
  const auto started = std::chrono::steady_clock::now();
  RunningOperator running("argocd-degraded");
  CommittedFile canary_file("tenants/team-a/broken-canary.yaml");
  CommittedFile stable_file("tenants/team-a/broken-stable.yaml");
  // testenv's kwok never starts a container whose image contains "unpullable" (ErrImagePull).
  // Both deadlines are short: a canary's is spec.canary.progressDeadlineSeconds, the stable
  // Deployment's spec.progressDeadlineSeconds.
  commit_file("tenants/team-a/broken-canary.yaml",
              myresource("broken-canary", "registry.example.com/team-a/web:v1", canary("unpullable"),
                         "  canary:\n    replicas: 1\n    progressDeadlineSeconds: 20\n"),
              "broken-canary: a canary on an image that cannot be pulled");
  const std::string revision =
      commit_file("tenants/team-a/broken-stable.yaml",
                  myresource("broken-stable", "registry.example.com/team-a/unpullable:v1", "",
                             "  progressDeadlineSeconds: 20\n"),
                  "broken-stable: an image that cannot be pulled");
  wait_for_resource_health(revision, "broken-canary", "Degraded", 240s);
  CHECK(condition_reason("team-a", "broken-canary", "Canary") == "CanaryFailed");
  WARN("the bad canary was Degraded after "
       << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()
       << " s");
  wait_for_resource_health(revision, "broken-stable", "Degraded", 240s);
  CHECK(condition_reason("team-a", "broken-stable", "Degraded") == "ProgressDeadlineExceeded");
  CHECK(health_status(kTenantApplication) == "Degraded");
  WARN("the bad stable image was Degraded after "
       << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()
       << " s");
}
