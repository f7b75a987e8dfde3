#pragma once
// What the packaging integration tests share: the pinned helm binary, CRDs of other
// projects (prometheus-operator, Argo CD) taken from pinned Go modules in the module cache,
// and namespaces with fixed names.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../unit/packaging/packaging_files.h"
#include "support/testenv.h"

namespace myop::packaging {

// CRDs of other projects, from pinned Go modules (downloaded into the module cache once).
inline constexpr const char* kPrometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator";
inline constexpr const char* kPrometheusOperatorVersion = "v0.85.0";
inline constexpr const char* kArgoCdModule = "github.com/argoproj/argo-cd/v3";

inline std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// A pin of hack/tools/versions.env (NAME=value), e.g. ARGOCD_VERSION: the Argo CD whose CRDs
// these tests read is the one hack/build-tools.sh builds and hack/argocd-env runs.
inline std::string pinned_version(const std::string& name) {
  const std::string text = read_text(testenv::source_dir() + "/hack/tools/versions.env");
  std::smatch match;
  const std::regex line("(^|\\n)" + name + "=([^\\n]+)");
  INFO("hack/tools/versions.env has no " << name << "= line");
  REQUIRE(std::regex_search(text, match, line));
  return trimmed(match[2]);
}

// The helm binary pinned by hack/tools (built by hack/build-tools.sh on first use).
inline std::string helm_binary() {
  static const std::string binary = testenv::tool_binary("helm", "helm");
  return binary;
}

// `helm <args>` against the test cluster.
inline testenv::CommandResult helm(const std::string& args) {
  return testenv::run(helm_binary() + " --kubeconfig " + shell_quote(testenv::kubeconfig_path()) + " " +
                      args);
}

// The API server's version, for `helm template --kube-version`.
inline std::string server_version() {
  const std::string json = testenv::kubectl_or_fail("version -o json");
  std::smatch match;
  static const std::regex git_version(
      R"re("serverVersion"[^}]*"gitVersion":\s*"v?([0-9]+\.[0-9]+\.[0-9]+))re");
  if (!std::regex_search(json, match, git_version)) FAIL("no serverVersion in: " << json);
  return match[1];
}

// `helm template my-operator <chart>` of charts/my-operator (or another chart folder) with flags:
// the rendered YAML (stdout only; helm's warnings on stderr are shown when it fails).
inline std::string helm_template(const std::string& flags, const std::string& chart = "") {
  const std::string chart_folder = chart.empty() ? testenv::source_dir() + "/charts/my-operator" : chart;
  TemporaryFolder folder("myop-helm-template");
  const std::string errors = (folder.path() / "stderr").string();
  const auto result =
      testenv::run("( " + helm_binary() + " template my-operator " + shell_quote(chart_folder) +
                   " --kube-version " + server_version() + " " + flags + " 2>" + shell_quote(errors) + " )");
  INFO("helm template " << flags << ": " << read_text(errors));
  REQUIRE(result.ok());
  return result.output;
}

// The folder of a Go module version in the module cache (`go mod download`), with the Go
// toolchain given (GOTOOLCHAIN; "local" is the installed Go): a module that requires a newer
// Go is not downloaded by an older one.
inline std::string go_module_dir(const std::string& module, const std::string& version,
                                 const std::string& toolchain = "local") {
  const auto result = testenv::run("cd \"$(mktemp -d)\" && GOTOOLCHAIN=" + toolchain +
                                   " GOFLAGS=-mod=mod go mod download -json " + module + "@" + version);
  std::smatch match;
  static const std::regex dir(R"re("Dir":\s*"([^"]+)")re");
  INFO("go mod download " << module << "@" << version << ": " << result.output);
  REQUIRE(std::regex_search(result.output, match, dir));
  return match[1];
}

// Applies CRD files (server-side: some are too large for the last-applied annotation) and
// waits until the API server serves each of the resources.
inline void install_crds(const std::vector<std::string>& files, const std::vector<std::string>& resources) {
  for (const std::string& file : files)
    testenv::kubectl_or_fail("apply --server-side --force-conflicts -f " + shell_quote(file));
  for (const std::string& resource : resources) {
    bool served = false;
    for (int attempt = 0; attempt < 150 && !served; ++attempt) {
      served = testenv::kubectl("get " + resource + " -A -o name").ok();
      if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    INFO("resource " << resource << " is not served 30 s after its CRD was applied");
    REQUIRE(served);
  }
}

inline void install_prometheus_operator_crds() {
  const std::string folder = go_module_dir(kPrometheusOperatorModule, kPrometheusOperatorVersion) +
                             "/example/prometheus-operator-crd/";
  install_crds({folder + "monitoring.coreos.com_servicemonitors.yaml",
                folder + "monitoring.coreos.com_prometheusrules.yaml"},
               {"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"});
}

inline void install_argocd_crds() {
  const std::string folder =
      go_module_dir(kArgoCdModule, pinned_version("ARGOCD_VERSION"), pinned_version("ARGOCD_GOTOOLCHAIN")) +
      "/manifests/crds/";
  install_crds(
      {folder + "application-crd.yaml", folder + "applicationset-crd.yaml", folder + "appproject-crd.yaml"},
      {"applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io"});
}

// A namespace with a fixed name (the manifests name it), created when missing and left in
// place afterwards (deleting it would leave it Terminating for the next test). Waits for a
// namespace still being deleted by someone else to be gone first.
class FixedNamespace {
 public:
  explicit FixedNamespace(const std::string& name) {
    for (int attempt = 0; attempt < 300; ++attempt) {
      const auto phase = testenv::kubectl("get namespace " + name + " -o jsonpath='{.status.phase}'");
      if (phase.ok() && trimmed(phase.output) == "Active") return;
      if (!phase.ok() && testenv::kubectl("create namespace " + name).ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    FAIL("namespace " << name << " did not become Active within 60 s");
  }
};

// A Helm release the test installs: uninstalled when the guard goes away, even when a
// REQUIRE ends the test early, so its cluster-scoped objects (ClusterRoles, bindings)
// never block the next run. Namespaces listed in also_delete (kept by the chart's
// resource policy) are deleted too.
class ReleaseGuard {
 public:
  ReleaseGuard(std::string release, std::string namespace_name, std::vector<std::string> also_delete = {})
      : release_(std::move(release)),
        namespace_(std::move(namespace_name)),
        also_delete_(std::move(also_delete)) {}
  ~ReleaseGuard() {
    helm("uninstall " + release_ + " -n " + namespace_ + " --ignore-not-found --wait --timeout 60s");
    for (const std::string& name : also_delete_)
      testenv::kubectl("delete namespace " + name + " --ignore-not-found --wait=false");
  }
  ReleaseGuard(const ReleaseGuard&) = delete;
  ReleaseGuard& operator=(const ReleaseGuard&) = delete;

 private:
  std::string release_;
  std::string namespace_;
  std::vector<std::string> also_delete_;
};

// `manifest` with the MyResource CRD's conversion clientConfig replaced by the run's (the fixture's
// webhook URL and CA, as testenv::crd_manifest has it): applied to the run's CRD, a Service there would
// sit beside the URL, which the API server refuses (whoever else owns the URL field: a client-side
// apply, or Argo CD's field manager after the Argo CD cases). Rewritten by the one rewriter the fixture,
// the bench and the Argo CD environment use too (hack/lib/webhook_client_config.py): every other line
// is left as it is. A manifest without that CRD is returned unchanged; FAILs when the rewriter does.
inline std::string with_fixture_webhook(const std::string& manifest) {
  if (manifest.find("CustomResourceDefinition") == std::string::npos) return manifest;
  static int count = 0;
  const std::string file = testenv::binary_dir() + "/testenv/with-fixture-webhook-" +
                           std::to_string(::getpid()) + "-" + std::to_string(++count) + ".yaml";
  { std::ofstream(file) << manifest; }
  const auto rewritten =
      testenv::run(shell_quote(testenv::source_dir() + "/hack/lib/webhook_client_config.py") +
                   " crd-if-present " + shell_quote(testenv::webhook_url()) + " " +
                   shell_quote(testenv::webhook_ca_path()) + " " + shell_quote(file));
  std::remove(file.c_str());
  if (!rewritten.ok()) FAIL("hack/lib/webhook_client_config.py crd-if-present failed: " << rewritten.output);
  return rewritten.output;
}

// `kubectl apply --server-side --dry-run=server` of a manifest text, as Argo CD applies the chart
// (ServerSideApply=true); fields are validated strictly (unknown fields are errors, not warnings).
// The MyResource CRD's clientConfig is the run's (with_fixture_webhook).
inline testenv::CommandResult server_dry_run(const std::string& manifest) {
  return testenv::kubectl_apply(with_fixture_webhook(manifest),
                                "--server-side --force-conflicts --dry-run=server --validate=strict");
}

}  // namespace myop::packaging
