// A tenant's AppProject (config/argocd/apps/tenant-projects.yaml) as a real Argo CD enforces it: a
// commit under tenants/team-a that carries anything but MyResources in team-a (a ClusterRoleBinding, a
// Deployment, a MyResource aimed at the operator's namespace, at default, or at another tenant's
// namespace team-b) is refused at sync, and nothing of it reaches the cluster. Hidden ([.argocd-env]) like
// argocd_test.cpp: it needs the argocd-env fixture of test/CMakeLists.txt.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "argocd/argocd_support.h"

using namespace myop;
using namespace myop::argocd_testing;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kProject = "tenant-team-a";

std::string operation_message() {
  return application_field(kTenantApplication, "{.status.operationState.message}");
}

bool exists(const std::string& what) { return testenv::kubectl("get " + what).ok(); }

}  // namespace

TEST_CASE(
    "argocd: a tenant's project refuses a ClusterRoleBinding, a Deployment and MyResources outside the "
    "tenant's namespace, another tenant's included",
    "[.argocd-env][argocd]") {
  // The operator runs so that MyResources an earlier test removed from git can be pruned (their
  // finalizer), which the clean sync at the end depends on.
  OperatorProcess running(chart_operator_options("argocd-project"));
  running.start();
  const std::string folder = "tenants/team-a/";
  const std::string escalation =
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: "
      "team-a-escalation\n"
      "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n"
      "subjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: Group\n    name: team-a-developers\n";
  const std::string deployment =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: team-a-sneaky\nspec:\n  replicas: 1\n"
      "  selector:\n    matchLabels: {app: sneaky}\n  template:\n    metadata:\n      labels: {app: sneaky}\n"
      "    spec:\n      containers:\n        - name: app\n          image: registry.example.com/sneaky:v1\n";
  const auto myresource_in = [](const std::string& name, const std::string& namespace_name) {
    return "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name +
           "\n  namespace: " + namespace_name + "\nspec:\n  image: registry.example.com/team-a/web:v1\n";
  };
  // One commit with all five: Argo CD validates every resource before it applies any, and reports
  // each refusal in the failed operation's message.
  const std::string bad = commit_to_apps(
      "tenant commit beyond its project",
      "mkdir -p " + folder + " && printf '%s' " + shell_quoted(escalation) + " > " + folder +
          "escalation.yaml && printf '%s' " + shell_quoted(deployment) + " > " + folder +
          "sneaky.yaml && printf '%s' " + shell_quoted(myresource_in("takeover", "my-operator-system")) +
          " > " + folder + "takeover.yaml && printf '%s' " +
          shell_quoted(myresource_in("elsewhere", "default")) + " > " + folder +
          "elsewhere.yaml && printf '%s' " + shell_quoted(myresource_in("neighbour", "team-b")) + " > " +
          folder + "neighbour.yaml");
  refresh(kTenantApplication);
  const std::string refusals[] = {
      "resource rbac.authorization.k8s.io:ClusterRoleBinding is not permitted in project " +
          std::string(kProject),
      "resource apps:Deployment is not permitted in project " + std::string(kProject),
      "namespace my-operator-system is not permitted in project '" + std::string(kProject) + "'",
      "namespace default is not permitted in project '" + std::string(kProject) + "'",
      "namespace team-b is not permitted in project '" + std::string(kProject) + "'",
  };
  {
    INFO(describe_application(kTenantApplication));
    REQUIRE(eventually(
        [&] {
          if (application_field(kTenantApplication, "{.status.operationState.operation.sync.revision}") !=
              bad)
            return false;
          const std::string message = operation_message();
          for (const auto& refusal : refusals)
            if (message.find(refusal) == std::string::npos) return false;
          return true;
        },
        180s));
  }
  CHECK(application_field(kTenantApplication, "{.status.operationState.phase}") != "Succeeded");
  CHECK(sync_status(kTenantApplication) == "OutOfSync");
  // Nothing of the commit was applied: Argo CD refuses the whole sync.
  CHECK_FALSE(exists("clusterrolebinding team-a-escalation"));
  CHECK_FALSE(exists("deployment team-a-sneaky -n team-a"));
  CHECK_FALSE(exists("myresource takeover -n my-operator-system"));
  CHECK_FALSE(exists("myresource elsewhere -n default"));
  CHECK_FALSE(exists("myresource neighbour -n team-b"));

  // The tenant removes the commit: the Application syncs again, and the tenant's own MyResource
  // was never touched. The failed operation would retry the refused revision with backoff first;
  // end it as `argocd app terminate-op` does.
  const std::string fixed =
      commit_to_apps("revert the commit beyond the project", "git revert --no-edit HEAD");
  testenv::kubectl(
      "patch application " + std::string(kTenantApplication) +
      " -n argocd --type merge -p '{\"status\":{\"operationState\":{\"phase\":\"Terminating\"}}}'");
  refresh(kTenantApplication);
  INFO(describe_application(kTenantApplication));
  REQUIRE(eventually(
      [&] {
        return current_revision(kTenantApplication) == fixed && sync_status(kTenantApplication) == "Synced";
      },
      180s));
  CHECK(exists("myresource web -n team-a"));  // the refused sync pruned nothing either
  CHECK_FALSE(exists("clusterrolebinding team-a-escalation"));
}
