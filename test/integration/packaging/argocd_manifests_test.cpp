// The Argo CD manifests of config/argocd are valid against Argo CD's own CRD schemas (from
// the pinned Argo CD Go module), by server-side dry run with strict field validation.
#include <catch2/catch.hpp>

#include <fnmatch.h>
#include <map>
#include <set>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

TEST_CASE("packaging: config/argocd is accepted by Argo CD's CRDs", "[packaging][argocd]") {
  install_argocd_crds();
  FixedNamespace argocd_namespace("argocd");
  const std::string folder = testenv::source_dir() + "/config/argocd";
  const auto result = testenv::kubectl("apply --dry-run=server --validate=strict -f " + folder + "/apps -f " +
                                       folder + "/root-application.yaml -f " + folder + "/argocd-cm.yaml");
  INFO(result.output);
  CHECK(result.ok());
  for (const char* object :
       {"application.argoproj.io/my-operator", "applicationset.argoproj.io/myresources",
        "appproject.argoproj.io/my-operator", "appproject.argoproj.io/tenant-team-a",
        "appproject.argoproj.io/tenant-team-b", "appproject.argoproj.io/my-operator-root",
        "application.argoproj.io/my-operator-root", "configmap/argocd-cm"}) {
    INFO(object);
    CHECK(result.output.find(object) != std::string::npos);
  }
}

TEST_CASE("packaging: the Argo CD schemas refuse a misspelt sync policy, so the dry run can fail",
          "[packaging][argocd]") {
  install_argocd_crds();
  FixedNamespace argocd_namespace("argocd");
  std::string application = read_text(testenv::source_dir() + "/config/argocd/apps/my-operator.yaml");
  const auto at = application.find("selfHeal: true");
  REQUIRE(at != std::string::npos);
  application.replace(at, std::string("selfHeal").size(), "selfHealing");
  const auto result = server_dry_run(application);
  INFO(result.output);
  CHECK_FALSE(result.ok());
  CHECK(result.output.find("selfHealing") != std::string::npos);
}

TEST_CASE("packaging: the operator Application syncs before the MyResource Applications",
          "[packaging][argocd]") {
  const std::string folder = testenv::source_dir() + "/config/argocd/apps/";
  const YAML::Node operator_app = YAML::LoadFile(folder + "my-operator.yaml");
  const YAML::Node resources = YAML::LoadFile(folder + "myresources.yaml");
  const int operator_wave =
      std::stoi(operator_app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"].as<std::string>());
  const int resources_wave =
      std::stoi(resources["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"].as<std::string>());
  CHECK(operator_wave < resources_wave);
  CHECK(operator_app["spec"]["syncPolicy"]["automated"]["prune"].as<bool>());
  CHECK(operator_app["spec"]["syncPolicy"]["automated"]["selfHeal"].as<bool>());
  CHECK(operator_app["spec"]["source"]["path"].as<std::string>() == "charts/my-operator");
}

TEST_CASE("packaging: Argo CD leaves the CRD's conversion caBundle to the operator", "[packaging][argocd]") {
  const YAML::Node application =
      YAML::LoadFile(testenv::source_dir() + "/config/argocd/apps/my-operator.yaml");
  bool ignored = false;
  for (const auto& entry : application["spec"]["ignoreDifferences"]) {
    if (entry["kind"].as<std::string>("") != "CustomResourceDefinition" ||
        entry["name"].as<std::string>("") != "myresources.myorg.io")
      continue;
    for (const auto& pointer : entry["jsonPointers"])
      ignored |= pointer.as<std::string>() == "/spec/conversion/webhook/clientConfig/caBundle";
  }
  CHECK(ignored);
  // Without it a sync would still write Git's (absent) caBundle over the operator's.
  std::set<std::string> options;
  for (const auto& option : application["spec"]["syncPolicy"]["syncOptions"])
    options.insert(option.as<std::string>());
  CHECK(options.count("RespectIgnoreDifferences=true") == 1);
}

namespace {

const std::string kApps = "/config/argocd/apps/";

YAML::Node argocd_file(const std::string& name) {
  return YAML::LoadFile(testenv::source_dir() + kApps + name);
}

// "group/kind" of each entry of a resource whitelist.
std::set<std::string> whitelisted(const YAML::Node& list) {
  std::set<std::string> kinds;
  for (const auto& entry : list)
    kinds.insert(entry["group"].as<std::string>() + "/" + entry["kind"].as<std::string>());
  return kinds;
}

std::string group_of(const YAML::Node& object) {
  const std::string api_version = object["apiVersion"].as<std::string>();
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

// Argo CD's destination rule, as the pinned version implements it (AppProject.isDestinationMatched in
// its module; every entry here names the in-cluster server or '*'): an entry matches a namespace its
// glob matches, and a '!pattern' entry matches every namespace *except* those of the pattern. So a
// '!' entry refuses what it names but allows everything else: alone next to `team-*` it would open
// `default` and `kube-system` to the tenants.
bool destination_allowed(const YAML::Node& project, const std::string& namespace_name) {
  bool allowed = false;
  for (const auto& destination : project["spec"]["destinations"]) {
    const std::string pattern = destination["namespace"].as<std::string>();
    const bool deny = !pattern.empty() && pattern[0] == '!';
    const bool matched = deny ? fnmatch(pattern.c_str() + 1, namespace_name.c_str(), 0) != 0
                              : fnmatch(pattern.c_str(), namespace_name.c_str(), 0) == 0;
    if (matched) {
      allowed = true;
    } else if (deny) {
      return false;
    }
  }
  return allowed;
}

// The tenant projects of tenant-projects.yaml, by name.
std::map<std::string, YAML::Node> tenant_projects() {
  std::map<std::string, YAML::Node> projects;
  for (const auto& project :
       yaml_documents(read_text(testenv::source_dir() + kApps + "tenant-projects.yaml")))
    projects[project["metadata"]["name"].as<std::string>()] = project;
  return projects;
}

// "group/kind/name" of each entry of a cluster resource whitelist ("group/kind/" without a name).
std::set<std::string> whitelisted_by_name(const YAML::Node& list) {
  std::set<std::string> entries;
  for (const auto& entry : list)
    entries.insert(entry["group"].as<std::string>() + "/" + entry["kind"].as<std::string>() + "/" +
                   entry["name"].as<std::string>(""));
  return entries;
}

}  // namespace

TEST_CASE(
    "packaging: each tenant's Application gets a project of its own: MyResources in the tenant's namespace "
    "only",
    "[packaging][argocd]") {
  const YAML::Node application_set = argocd_file("myresources.yaml");
  const YAML::Node template_spec = application_set["spec"]["template"]["spec"];
  // The folder tenants/<name> is deployed into namespace <name> by project tenant-<name>.
  CHECK(template_spec["project"].as<std::string>() == "tenant-{{ .path.basename }}");
  CHECK(template_spec["destination"]["namespace"].as<std::string>() == "{{ .path.basename }}");
  const auto projects = tenant_projects();
  // Every tenant namespace the chart creates has its project, and no project is for anything else.
  std::set<std::string> tenants;
  for (const auto& tenant :
       argocd_file("my-operator.yaml")["spec"]["source"]["helm"]["valuesObject"]["tenants"])
    tenants.insert(tenant["name"].as<std::string>());
  REQUIRE(tenants.size() >= 2);
  CHECK(projects.size() == tenants.size());
  for (const std::string& tenant : tenants) {
    INFO(tenant);
    const auto found = projects.find("tenant-" + tenant);
    REQUIRE(found != projects.end());
    const YAML::Node spec = found->second["spec"];
    CHECK(spec["clusterResourceWhitelist"].IsSequence());
    CHECK(spec["clusterResourceWhitelist"].size() == 0);
    CHECK(whitelisted(spec["namespaceResourceWhitelist"]) == std::set<std::string>{"myorg.io/MyResource"});
    CHECK_FALSE(spec["namespaceResourceBlacklist"]);
    REQUIRE(spec["sourceRepos"].size() == 1);
    CHECK(spec["sourceRepos"][0].as<std::string>() ==
          application_set["spec"]["generators"][0]["git"]["repoURL"].as<std::string>());
    CHECK(destination_allowed(found->second, tenant));
    // Another tenant's namespace is refused: a file under tenants/team-a saying `namespace: team-b`
    // never lands there.
    for (const std::string& other : tenants) {
      if (other == tenant) continue;
      INFO("another tenant: " << other);
      CHECK_FALSE(destination_allowed(found->second, other));
    }
    for (const char* forbidden : {"my-operator-system", "kube-system", "default", "argocd", "team-c"}) {
      INFO(forbidden);
      CHECK_FALSE(destination_allowed(found->second, forbidden));
    }
  }
}

TEST_CASE(
    "packaging: the operator's project allows the cluster-scoped objects its chart renders by name, its "
    "kinds in its namespaces, and no more",
    "[packaging][argocd]") {
  const YAML::Node project = argocd_file("project.yaml");
  const YAML::Node application = argocd_file("my-operator.yaml");
  CHECK(application["spec"]["project"].as<std::string>() == project["metadata"]["name"].as<std::string>());
  REQUIRE(project["spec"]["sourceRepos"].size() == 1);
  CHECK(project["spec"]["sourceRepos"][0].as<std::string>() ==
        application["spec"]["source"]["repoURL"].as<std::string>());
  const std::string release_namespace = application["spec"]["destination"]["namespace"].as<std::string>();
  // The Application's own values, and the same with every toggle the chart has: a cluster-scoped
  // object either renders is allowed, by name, and nothing else.
  TemporaryFolder folder("myop-argocd-values");
  write_text(folder.path() / "application.yaml",
             YAML::Dump(application["spec"]["source"]["helm"]["valuesObject"]));
  write_text(folder.path() / "more.yaml",
             "metrics: {certSecret: metrics-tls, grafanaDashboard: {enabled: true}}\n"
             "watchNamespaces: [team-a]\n");
  const std::string values = " -f " + shell_quote((folder.path() / "application.yaml").string());
  std::vector<YAML::Node> objects = yaml_documents(helm_template("-n " + release_namespace + values));
  const auto more = yaml_documents(helm_template("-n " + release_namespace + values + " -f " +
                                                 shell_quote((folder.path() / "more.yaml").string())));
  objects.insert(objects.end(), more.begin(), more.end());
  REQUIRE_FALSE(objects.empty());
  const auto cluster_entries = whitelisted_by_name(project["spec"]["clusterResourceWhitelist"]);
  const auto namespaced_kinds = whitelisted(project["spec"]["namespaceResourceWhitelist"]);
  std::set<std::string> rendered_cluster_objects, rendered_namespaced_kinds;
  for (const auto& object : objects) {
    const std::string kind = group_of(object) + "/" + object["kind"].as<std::string>();
    const std::string name = object["metadata"]["name"].as<std::string>();
    INFO(kind << " " << name);
    if (object["metadata"]["namespace"]) {
      rendered_namespaced_kinds.insert(kind);
      CHECK(namespaced_kinds.count(kind) == 1);
      CHECK(destination_allowed(project, object["metadata"]["namespace"].as<std::string>()));
    } else {
      rendered_cluster_objects.insert(kind + "/" + name);
      CHECK(cluster_entries.count(kind + "/" + name) == 1);
    }
  }
  // Argo CD creates and labels the release namespace itself (CreateNamespace, managedNamespaceMetadata).
  std::set<std::string> options;
  for (const auto& option : application["spec"]["syncPolicy"]["syncOptions"])
    options.insert(option.as<std::string>());
  REQUIRE(options.count("CreateNamespace=true") == 1);
  rendered_cluster_objects.insert("/Namespace/" + release_namespace);
  // Every entry names one object (no entry without a name allows a whole kind), and none is unused.
  for (const std::string& entry : cluster_entries) {
    INFO(entry);
    CHECK(entry.back() != '/');
    CHECK(entry.find('*') == std::string::npos);
  }
  CHECK(rendered_cluster_objects == cluster_entries);
  CHECK(rendered_namespaced_kinds == namespaced_kinds);
  // Namespaces by name too: the release's and the chart's tenants', nothing by pattern.
  std::set<std::string> destinations;
  for (const auto& destination : project["spec"]["destinations"])
    destinations.insert(destination["namespace"].as<std::string>());
  std::set<std::string> expected_destinations = {release_namespace};
  for (const auto& tenant : application["spec"]["source"]["helm"]["valuesObject"]["tenants"])
    expected_destinations.insert(tenant["name"].as<std::string>());
  CHECK(destinations == expected_destinations);
}

TEST_CASE(
    "packaging: the root and the operator's Applications follow the release tag, in projects of their own",
    "[packaging][argocd]") {
  const auto root_documents =
      yaml_documents(read_text(testenv::source_dir() + "/config/argocd/root-application.yaml"));
  REQUIRE(root_documents.size() == 2);
  const YAML::Node root_project = root_documents[0];
  const YAML::Node root = root_documents[1];
  REQUIRE(root_project["kind"].as<std::string>() == "AppProject");
  REQUIRE(root["kind"].as<std::string>() == "Application");
  const YAML::Node operator_application = argocd_file("my-operator.yaml");
  // The chart's version, as a tag: a change on a branch reaches the cluster only with a release.
  const std::string chart_version =
      YAML::LoadFile(testenv::source_dir() + "/charts/my-operator/Chart.yaml")["version"].as<std::string>();
  CHECK(root["spec"]["source"]["targetRevision"].as<std::string>() == "v" + chart_version);
  CHECK(operator_application["spec"]["source"]["targetRevision"].as<std::string>() == "v" + chart_version);
  // Not the built-in `default` project (every kind, every namespace): Argo CD's own kinds in argocd only.
  CHECK(root["spec"]["project"].as<std::string>() == root_project["metadata"]["name"].as<std::string>());
  CHECK(root_project["metadata"]["name"].as<std::string>() != "default");
  CHECK(root_project["spec"]["clusterResourceWhitelist"].size() == 0);
  CHECK(whitelisted(root_project["spec"]["namespaceResourceWhitelist"]) ==
        std::set<std::string>{"argoproj.io/AppProject", "argoproj.io/Application",
                              "argoproj.io/ApplicationSet"});
  CHECK(destination_allowed(root_project, "argocd"));
  CHECK_FALSE(destination_allowed(root_project, "my-operator-system"));
  CHECK_FALSE(destination_allowed(root_project, "kube-system"));
  REQUIRE(root_project["spec"]["sourceRepos"].size() == 1);
  CHECK(root_project["spec"]["sourceRepos"][0].as<std::string>() ==
        root["spec"]["source"]["repoURL"].as<std::string>());
}
