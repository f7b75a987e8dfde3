// The chart carries the same CRD, admission policy and dashboard as config/: byte for byte,
// so `helm install` and `kubectl apply -k config/default` install the same API.
#include <catch2/catch.hpp>

#include "packaging_files.h"

using namespace myop::packaging;

TEST_CASE("packaging: every file of config/crd is in the chart, byte for byte", "[packaging][chart]") {
  const auto root = repository_root();
  const auto crd_files = yaml_files(root / "config/crd");
  std::vector<std::filesystem::path> api_files;
  for (const auto& file : crd_files)
    if (file.filename() != "kustomization.yaml") api_files.push_back(file);
  REQUIRE_FALSE(api_files.empty());
  for (const auto& file : api_files) {
    const auto copy = root / "charts/my-operator/files/crds" / file.filename();
    INFO("config/crd/" << file.filename().string() << " vs charts/my-operator/files/crds/"
                       << file.filename().string() << " (copy it over after changing the CRD)");
    REQUIRE(std::filesystem::exists(copy));
    CHECK(read_text(copy) == read_text(file));
  }
  // No stale extra file in the chart either.
  CHECK(yaml_files(root / "charts/my-operator/files/crds").size() == api_files.size());
}

TEST_CASE("packaging: the chart's Grafana dashboard is the one in config/grafana", "[packaging][chart]") {
  const auto root = repository_root();
  CHECK(read_text(root / "charts/my-operator/files/dashboards/my-operator-dashboard.json") ==
        read_text(root / "config/grafana/my-operator-dashboard.json"));
}

TEST_CASE("packaging: the chart's CRD template reads the CRD file and marks it keep", "[packaging][chart]") {
  const std::string crd_template = read_text(repository_root() / "charts/my-operator/templates/crds.yaml");
  CHECK(crd_template.find(".Files.Get \"files/crds/myorg.io_myresources.yaml\"") != std::string::npos);
  CHECK(crd_template.find("helm.sh/resource-policy") != std::string::npos);
  // Helm installs crds/ once and never upgrades it: the CRD must not live there.
  CHECK_FALSE(std::filesystem::exists(repository_root() / "charts/my-operator/crds"));
}
