#pragma once
// The least-privilege rules every RBAC object we ship must follow: no "*" in apiGroups,
// resources, verbs, resourceNames or nonResourceURLs, no escalate/bind/impersonate, and no
// binding to cluster-admin. Used on config/rbac (unit test) and on the rendered Helm chart
// (integration test).

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

namespace myop::packaging {

inline std::string object_name(const YAML::Node& object) {
  return object["kind"].as<std::string>("?") + "/" + object["metadata"]["name"].as<std::string>("?");
}

// One line per violation; empty when the objects follow the rules.
inline std::vector<std::string> rbac_violations(const std::vector<YAML::Node>& objects) {
  static const std::set<std::string> dangerous_verbs = {"escalate", "bind", "impersonate"};
  static const std::set<std::string> superuser_roles = {"cluster-admin", "system:masters"};
  std::vector<std::string> violations;
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>("");
    if (kind == "Role" || kind == "ClusterRole") {
      if (object["aggregationRule"]) violations.push_back(object_name(object) + " aggregates other roles");
      for (const YAML::Node& rule : object["rules"]) {
        for (const char* field : {"apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"}) {
          for (const YAML::Node& value : rule[field]) {
            const std::string text = value.as<std::string>("");
            if (text.find('*') != std::string::npos)
              violations.push_back(object_name(object) + " has a wildcard in " + field + ": " + text);
            if (std::string(field) == "verbs" && dangerous_verbs.count(text))
              violations.push_back(object_name(object) + " grants " + text);
          }
        }
        // The one non-resource grant we ship: the metrics-reader's `get` on /metrics, for
        // Prometheus (--metrics-secure). Any other URL or verb is a violation.
        if (rule["nonResourceURLs"]) {
          const YAML::Node urls = rule["nonResourceURLs"];
          const YAML::Node verbs = rule["verbs"];
          const bool metrics_get_only = urls.IsSequence() && urls.size() == 1 &&
                                        urls[0].as<std::string>("") == "/metrics" && verbs.IsSequence() &&
                                        verbs.size() == 1 && verbs[0].as<std::string>("") == "get" &&
                                        !rule["apiGroups"] && !rule["resources"];
          if (!metrics_get_only || kind != "ClusterRole")
            violations.push_back(object_name(object) + " grants nonResourceURLs other than get /metrics");
        }
      }
    }
    if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
      const std::string role = object["roleRef"]["name"].as<std::string>("");
      if (superuser_roles.count(role)) violations.push_back(object_name(object) + " binds " + role);
      for (const YAML::Node& subject : object["subjects"]) {
        if (subject["kind"].as<std::string>("") == "Group" &&
            superuser_roles.count(subject["name"].as<std::string>("")))
          violations.push_back(object_name(object) + " binds to group " +
                               subject["name"].as<std::string>(""));
      }
    }
  }
  return violations;
}

// (apiGroup, resource) -> verbs granted by the rules of one Role or ClusterRole.
inline std::set<std::string> granted(const YAML::Node& role) {
  std::set<std::string> grants;
  for (const YAML::Node& rule : role["rules"]) {
    for (const YAML::Node& group : rule["apiGroups"])
      for (const YAML::Node& resource : rule["resources"])
        for (const YAML::Node& verb : rule["verbs"])
          grants.insert(group.as<std::string>() + "/" + resource.as<std::string>() + ":" +
                        verb.as<std::string>());
  }
  return grants;
}

// nonResourceURL:verb pairs granted by the rules of one ClusterRole, e.g. "/metrics:get".
inline std::set<std::string> granted_non_resource(const YAML::Node& role) {
  std::set<std::string> grants;
  for (const YAML::Node& rule : role["rules"])
    for (const YAML::Node& url : rule["nonResourceURLs"])
      for (const YAML::Node& verb : rule["verbs"])
        grants.insert(url.as<std::string>() + ":" + verb.as<std::string>());
  return grants;
}

// What --metrics-secure needs cluster-wide (the metrics-auth-role): the two review APIs that
// runtime/http/metrics_authorizer.cpp POSTs to, create only.
inline std::set<std::string> expected_metrics_auth_grants() {
  return {"authentication.k8s.io/tokenreviews:create", "authorization.k8s.io/subjectaccessreviews:create"};
}

// (apiGroup, resource, name) -> verbs granted by the rules of a role that name their objects, e.g.
// "/secrets/my-operator-webhook-cert:get"; rules without resourceNames are left out.
inline std::set<std::string> granted_by_name(const YAML::Node& role) {
  std::set<std::string> grants;
  for (const YAML::Node& rule : role["rules"])
    for (const YAML::Node& group : rule["apiGroups"])
      for (const YAML::Node& resource : rule["resources"])
        for (const YAML::Node& name : rule["resourceNames"])
          for (const YAML::Node& verb : rule["verbs"])
            grants.insert(group.as<std::string>() + "/" + resource.as<std::string>() + "/" +
                          name.as<std::string>() + ":" + verb.as<std::string>());
  return grants;
}

// The conversion webhook's self-managed certificates (runtime/certificates/webhook_certificates.cpp): the
// MyResource CRD, read and its caBundle patched, by name only.
inline std::set<std::string> expected_webhook_crd_grants() {
  return {"apiextensions.k8s.io/customresourcedefinitions/myresources.myorg.io:get",
          "apiextensions.k8s.io/customresourcedefinitions/myresources.myorg.io:patch"};
}

// The storage version migration (runtime/migration/storage_migration.cpp): the MyResource CRD read, its
// status (storedVersions) patched, by name only.
inline std::set<std::string> expected_storage_migration_grants() {
  return {"apiextensions.k8s.io/customresourcedefinitions/myresources.myorg.io:get",
          "apiextensions.k8s.io/customresourcedefinitions/status/myresources.myorg.io:patch"};
}

// ... and the Secrets holding them in the operator's namespace, the serving one (`secret`) and the
// CA's (`secret`-ca): create (which RBAC cannot limit by name), then get and update of those two only.
inline std::set<std::string> expected_webhook_secret_grants(const std::string& secret) {
  const std::string ca = secret + "-ca";
  return {"/secrets:create", "/secrets/" + secret + ":get", "/secrets/" + secret + ":update",
          "/secrets/" + ca + ":get", "/secrets/" + ca + ":update"};
}

// Every grant of a role: by name where the rule names its objects, else by resource.
inline std::set<std::string> all_grants(const YAML::Node& role) {
  std::set<std::string> grants;
  for (const YAML::Node& rule : role["rules"]) {
    YAML::Node one;
    one["rules"].push_back(rule);
    const auto from_rule = rule["resourceNames"] ? granted_by_name(one) : granted(one);
    grants.insert(from_rule.begin(), from_rule.end());
  }
  return grants;
}

// What my-operator needs in each namespace it watches (docs/design.md "Permissions"), as granted() spells it.
inline std::set<std::string> expected_manager_grants() {
  std::set<std::string> grants;
  auto add = [&](const std::string& resource, std::initializer_list<const char*> verbs) {
    for (const char* verb : verbs) grants.insert(resource + ":" + verb);
  };
  add("myorg.io/myresources", {"list", "watch", "patch"});
  add("myorg.io/myresources/status", {"patch"});
  add("myorg.io/myresources/finalizers", {"update"});
  add("apps/deployments", {"list", "watch", "create", "patch", "delete"});
  add("events.k8s.io/events", {"create", "patch"});
  return grants;
}

// What it needs in its own namespace: the Lease and the feature-flag ConfigMap.
inline std::set<std::string> expected_own_namespace_grants(bool leader_election = true) {
  std::set<std::string> grants = {"/configmaps:list", "/configmaps:watch"};
  if (leader_election) {
    for (const char* verb : {"get", "create", "update"})
      grants.insert(std::string("coordination.k8s.io/leases:") + verb);
  }
  return grants;
}

}  // namespace myop::packaging
