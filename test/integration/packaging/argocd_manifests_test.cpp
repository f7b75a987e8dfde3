// The Argo CD manifests of config/argocd are valid against Argo CD's own CRD schemas (from
// the pinned Argo CD Go module), by server-side dry run with strict field validation.
#include <catch2/catch.hpp>

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
  for (const char* object : {"application.argoproj.io/my-operator", "applicationset.argoproj.io/myresources",
                             "appproject.argoproj.io/my-operator", "application.argoproj.io/my-operator-root",
                             "configmap/argocd-cm"}) {
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
