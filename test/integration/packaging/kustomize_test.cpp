// `kubectl apply -k config/default` (and config/metrics-certificate, config/prometheus) is accepted by
// the API server.
#include <catch2/catch.hpp>

#include <algorithm>

#include "../../unit/packaging/rbac_policy.h"
#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

// The folder to pass to -k: config/default itself, or, while config/crd has no
// kustomization.yaml yet (its owner adds it), a copy of config/ with one.
std::string default_kustomization(TemporaryFolder& scratch) {
  const std::filesystem::path config = testenv::source_dir() + "/config";
  if (std::filesystem::exists(config / "crd/kustomization.yaml")) return (config / "default").string();
  WARN(
      "config/crd/kustomization.yaml is missing, so `kubectl apply -k config/default` fails for users; "
      "testing a copy of config/ with one");
  std::filesystem::copy(config, scratch.path() / "config", std::filesystem::copy_options::recursive);
  std::string resources;
  for (const auto& file : yaml_files(config / "crd")) resources += "  - " + file.filename().string() + "\n";
  write_text(scratch.path() / "config/crd/kustomization.yaml",
             "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + resources);
  return (scratch.path() / "config/default").string();
}

}  // namespace

TEST_CASE("packaging: kubectl apply -k config/default --dry-run=server is accepted",
          "[packaging][kustomize]") {
  TemporaryFolder scratch("myop-kustomize");
  const std::string folder = default_kustomization(scratch);
  // Namespaced objects can only be dry-run into a namespace that exists. What `kubectl apply -k`
  // applies, with the CRD's webhook the run's (server_dry_run).
  FixedNamespace system_namespace("my-operator-system");
  const auto result = server_dry_run(testenv::kubectl_or_fail("kustomize " + shell_quote(folder)));
  INFO(result.output);
  CHECK(result.ok());
  for (const char* object :
       {"customresourcedefinition.apiextensions.k8s.io/myresources.myorg.io", "deployment.apps/my-operator",
        "serviceaccount/my-operator", "clusterrole.rbac.authorization.k8s.io/my-operator-manager",
        "role.rbac.authorization.k8s.io/my-operator-leader-election", "configmap/my-operator-config",
        "service/my-operator-metrics", "networkpolicy.networking.k8s.io/my-operator",
        "deployment.apps/my-operator-webhook", "serviceaccount/my-operator-webhook",
        "service/my-operator-webhook", "poddisruptionbudget.policy/my-operator-webhook",
        "networkpolicy.networking.k8s.io/my-operator-webhook",
        "validatingadmissionpolicy.admissionregistration.k8s.io/my-operator-service-account-deployments",
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/my-operator-service-account-crds"}) {
    INFO(object);
    CHECK(result.output.find(object) != std::string::npos);
  }

  const auto built = testenv::kubectl("kustomize " + shell_quote(folder));
  REQUIRE(built.ok());
  const auto objects = yaml_documents(built.output);
  CHECK(rbac_violations(objects).empty());
  // The webhook runs apart: the manager serves none, and the Service picks the webhook's pods only.
  for (const auto& object : objects) {
    if (object["kind"].as<std::string>() == "Deployment" &&
        object["metadata"]["name"].as<std::string>() == "my-operator") {
      for (const auto& arg : object["spec"]["template"]["spec"]["containers"][0]["args"])
        CHECK(arg.as<std::string>().rfind("--webhook", 0) != 0);
    }
    if (object["kind"].as<std::string>() == "Service" &&
        object["metadata"]["name"].as<std::string>() == "my-operator-webhook") {
      CHECK(object["spec"]["selector"]["app.kubernetes.io/component"].as<std::string>("") == "webhook");
      CHECK_FALSE(object["spec"]["publishNotReadyAddresses"]);
    }
  }
}

TEST_CASE("packaging: kubectl apply -k config/prometheus --dry-run=server is accepted",
          "[packaging][kustomize]") {
  install_prometheus_operator_crds();
  FixedNamespace system_namespace("my-operator-system");
  const auto result = testenv::kubectl("apply -k " + testenv::source_dir() +
                                       "/config/prometheus --dry-run=server --validate=strict");
  INFO(result.output);
  CHECK(result.ok());
  CHECK(result.output.find("servicemonitor.monitoring.coreos.com/my-operator") != std::string::npos);
  CHECK(result.output.find("prometheusrule.monitoring.coreos.com/my-operator") != std::string::npos);
  CHECK(result.output.find("secret/my-operator-metrics-scraper-token") != std::string::npos);
  CHECK(result.output.find("clusterrolebinding.rbac.authorization.k8s.io/my-operator-metrics-scraper") !=
        std::string::npos);

  // The ServiceMonitor verifies the certificate with its Secret's CA and sends the scraper's token.
  const YAML::Node endpoint =
      YAML::LoadFile(testenv::source_dir() + "/config/prometheus/monitor.yaml")["spec"]["endpoints"][0];
  CHECK(endpoint["scheme"].as<std::string>("") == "https");
  CHECK_FALSE(endpoint["tlsConfig"]["insecureSkipVerify"]);
  CHECK(endpoint["tlsConfig"]["ca"]["secret"]["name"].as<std::string>("") == "my-operator-metrics-cert");
  CHECK(endpoint["tlsConfig"]["serverName"].as<std::string>("") ==
        "my-operator-metrics.my-operator-system.svc");
  CHECK_FALSE(endpoint["bearerTokenFile"]);
  CHECK(endpoint["authorization"]["credentials"]["name"].as<std::string>("") ==
        "my-operator-metrics-scraper-token");
}

TEST_CASE(
    "packaging: kubectl apply -k config/metrics-certificate serves the certificate Secret the ServiceMonitor "
    "verifies",
    "[packaging][kustomize]") {
  FixedNamespace system_namespace("my-operator-system");
  const std::string folder = testenv::source_dir() + "/config/metrics-certificate";
  const auto result = server_dry_run(testenv::kubectl_or_fail("kustomize " + shell_quote(folder)));
  INFO(result.output);
  CHECK(result.ok());
  CHECK(result.output.find("deployment.apps/my-operator") != std::string::npos);

  const auto built = testenv::kubectl("kustomize " + shell_quote(folder));
  REQUIRE(built.ok());
  std::vector<YAML::Node> deployments;
  for (const auto& object : yaml_documents(built.output))
    if (object["kind"].as<std::string>("") == "Deployment") deployments.push_back(object);
  // The manager and the webhook both serve /metrics with the certificate.
  REQUIRE(deployments.size() == 2);
  for (const auto& deployment : deployments) {
    INFO(deployment["metadata"]["name"].as<std::string>());
    const YAML::Node pod = deployment["spec"]["template"]["spec"];
    std::vector<std::string> args;
    for (const auto& arg : pod["containers"][0]["args"]) args.push_back(arg.as<std::string>());
    CHECK(std::count(args.begin(), args.end(), "--metrics-secure") == 1);
    CHECK(std::count(args.begin(), args.end(), "--metrics-cert-dir=/etc/my-operator/metrics-certs") == 1);
    bool mounted = false;
    for (const auto& mount : pod["containers"][0]["volumeMounts"])
      mounted = mounted || (mount["name"].as<std::string>("") == "metrics-certs" &&
                            mount["mountPath"].as<std::string>("") == "/etc/my-operator/metrics-certs");
    CHECK(mounted);
    // The Secret whose ca.crt config/prometheus's ServiceMonitor verifies with.
    const std::string monitor_secret =
        YAML::LoadFile(
            testenv::source_dir() +
            "/config/prometheus/monitor.yaml")["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["name"]
            .as<std::string>("");
    bool volume = false;
    for (const auto& item : pod["volumes"])
      volume = volume || (item["name"].as<std::string>("") == "metrics-certs" &&
                          item["secret"]["secretName"].as<std::string>("") == monitor_secret);
    CHECK(volume);
  }
}
