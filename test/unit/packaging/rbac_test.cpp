// config/rbac grants exactly what docs/design.md says the operator uses, and nothing that the
// least-privilege rules forbid (wildcards, escalation verbs, cluster-admin bindings).
#include <catch2/catch.hpp>

#include <tuple>

#include "packaging_files.h"
#include "rbac_policy.h"

using namespace myop::packaging;

namespace {

std::vector<YAML::Node> config_rbac_objects() {
  std::vector<YAML::Node> objects;
  for (const auto& file : yaml_files(repository_root() / "config/rbac")) {
    if (file.filename() == "kustomization.yaml") continue;
    for (const YAML::Node& document : yaml_documents(read_text(file))) objects.push_back(document);
  }
  return objects;
}

YAML::Node find_object(const std::vector<YAML::Node>& objects, const std::string& kind,
                       const std::string& name) {
  for (const YAML::Node& object : objects) {
    if (object["kind"].as<std::string>("") == kind && object["metadata"]["name"].as<std::string>("") == name)
      return object;
  }
  FAIL("no " << kind << "/" << name << " in config/rbac");
  return {};
}

}  // namespace

TEST_CASE("packaging: config/rbac has no wildcard, no escalation verb and no cluster-admin binding",
          "[packaging][rbac]") {
  const std::vector<YAML::Node> objects = config_rbac_objects();
  REQUIRE(objects.size() >= 7);
  const std::vector<std::string> violations = rbac_violations(objects);
  for (const std::string& violation : violations) UNSCOPED_INFO(violation);
  CHECK(violations.empty());
}

TEST_CASE("packaging: the RBAC check catches wildcards and cluster-admin bindings", "[packaging][rbac]") {
  const auto objects = yaml_documents(R"(
kind: ClusterRole
metadata: {name: too-wide}
rules:
  - apiGroups: ["*"]
    resources: [deployments]
    verbs: [get]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: ["*"]
---
kind: ClusterRoleBinding
metadata: {name: root}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: my-operator, namespace: my-operator-system}]
)");
  CHECK(rbac_violations(objects).size() == 3);

  // Non-resource grants: only a ClusterRole's `get` on /metrics passes.
  const auto metrics_reader = yaml_documents(R"(
kind: ClusterRole
metadata: {name: metrics-reader}
rules: [{nonResourceURLs: [/metrics], verbs: [get]}]
)");
  CHECK(rbac_violations(metrics_reader).empty());
  for (const char* rules :
       {"[{nonResourceURLs: [/metrics, /debug/pprof], verbs: [get]}]",
        "[{nonResourceURLs: [/metrics], verbs: [get, post]}]",
        "[{nonResourceURLs: [/healthz], verbs: [get]}]", "[{nonResourceURLs: [\"/*\"], verbs: [get]}]"}) {
    INFO(rules);
    CHECK_FALSE(rbac_violations(
                    yaml_documents(std::string("kind: ClusterRole\nmetadata: {name: wide}\nrules: ") + rules))
                    .empty());
  }
}

TEST_CASE("packaging: the manager ClusterRole grants exactly the verbs the operator uses",
          "[packaging][rbac]") {
  const auto objects = config_rbac_objects();
  CHECK(granted(find_object(objects, "ClusterRole", "my-operator-manager")) == expected_manager_grants());
  const YAML::Node own_namespace = find_object(objects, "Role", "my-operator-leader-election");
  CHECK(own_namespace["metadata"]["namespace"].as<std::string>() == "my-operator-system");
  CHECK(granted(own_namespace) == expected_own_namespace_grants());
}

TEST_CASE(
    "packaging: --metrics-secure's roles: the operator may create token and access reviews, Prometheus may "
    "get "
    "/metrics, and nothing more",
    "[packaging][rbac]") {
  const auto objects = config_rbac_objects();
  const YAML::Node auth = find_object(objects, "ClusterRole", "my-operator-metrics-auth-role");
  CHECK(granted(auth) == expected_metrics_auth_grants());
  CHECK(granted_non_resource(auth).empty());
  const YAML::Node reader = find_object(objects, "ClusterRole", "my-operator-metrics-reader");
  CHECK(granted(reader).empty());
  CHECK(granted_non_resource(reader) == std::set<std::string>{"/metrics:get"});
  // Shipped unbound: the operator's Prometheus is not known here.
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>("");
    if (kind == "ClusterRoleBinding" || kind == "RoleBinding")
      CHECK(object["roleRef"]["name"].as<std::string>("") != "my-operator-metrics-reader");
  }
}

TEST_CASE(
    "packaging: the webhook's and the storage migration's roles name the MyResource CRD and the operator's "
    "own Secret",
    "[packaging][rbac]") {
  const auto objects = config_rbac_objects();
  CHECK(all_grants(find_object(objects, "ClusterRole", "my-operator-webhook")) ==
        expected_webhook_crd_grants());
  const YAML::Node secret_role = find_object(objects, "Role", "my-operator-webhook-secret");
  CHECK(secret_role["metadata"]["namespace"].as<std::string>() == "my-operator-system");
  CHECK(all_grants(secret_role) == expected_webhook_secret_grants("my-operator-webhook-cert"));
  CHECK(all_grants(find_object(objects, "ClusterRole", "my-operator-storage-migration")) ==
        expected_storage_migration_grants());
}

TEST_CASE(
    "packaging: the bindings give the manager roles to the operator's ServiceAccount and the webhook's "
    "certificate roles to the webhook's",
    "[packaging][rbac]") {
  const auto objects = config_rbac_objects();
  const YAML::Node account = find_object(objects, "ServiceAccount", "my-operator");
  const std::string namespace_name = account["metadata"]["namespace"].as<std::string>();
  CHECK(find_object(objects, "ServiceAccount", "my-operator-webhook")["metadata"]["namespace"]
            .as<std::string>() == namespace_name);
  // Both serve /metrics; only the webhook holds the certificate rights, only the manager the rest.
  for (const auto& [kind, name, accounts] :
       std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"ClusterRoleBinding", "my-operator-manager", {"my-operator"}},
           {"RoleBinding", "my-operator-leader-election", {"my-operator"}},
           {"ClusterRoleBinding",
            "my-operator-metrics-auth-rolebinding",
            {"my-operator", "my-operator-webhook"}},
           {"ClusterRoleBinding", "my-operator-webhook", {"my-operator-webhook"}},
           {"RoleBinding", "my-operator-webhook-secret", {"my-operator-webhook"}},
           {"ClusterRoleBinding", "my-operator-storage-migration", {"my-operator"}}}) {
    INFO(kind << "/" << name);
    const YAML::Node binding = find_object(objects, kind, name);
    const std::string role =
        name == "my-operator-metrics-auth-rolebinding" ? "my-operator-metrics-auth-role" : name;
    CHECK(binding["roleRef"]["name"].as<std::string>() == role);
    std::vector<std::string> bound;
    for (const YAML::Node& subject : binding["subjects"]) {
      CHECK(subject["kind"].as<std::string>() == "ServiceAccount");
      CHECK(subject["namespace"].as<std::string>() == namespace_name);
      bound.push_back(subject["name"].as<std::string>());
    }
    CHECK(bound == accounts);
  }
}

TEST_CASE(
    "packaging: the viewer and editor ClusterRoles aggregate into view and edit and cannot write status",
    "[packaging][rbac]") {
  const auto objects = config_rbac_objects();
  const YAML::Node viewer = find_object(objects, "ClusterRole", "my-operator-myresource-viewer");
  const YAML::Node editor = find_object(objects, "ClusterRole", "my-operator-myresource-editor");
  CHECK(viewer["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"].as<std::string>("") ==
        "true");
  CHECK(editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"].as<std::string>("") ==
        "true");
  for (const YAML::Node& role : {viewer, editor}) {
    for (const std::string& grant : granted(role)) {
      INFO(object_name(role) << " grants " << grant);
      CHECK((grant.rfind("myorg.io/myresources/status:", 0) != 0 ||
             grant == "myorg.io/myresources/status:get"));
    }
  }
  CHECK(granted(viewer).count("myorg.io/myresources:create") == 0);
  CHECK(granted(editor).count("myorg.io/myresources:create") == 1);
}
