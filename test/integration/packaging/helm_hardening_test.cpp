// What the platform review of issue 19 asked of the chart: the operator pod's NetworkPolicy, its
// ephemeral-storage bounds, and values that are refused with a message instead of rendering a
// cluster hazard (a system namespace as a tenant, a budget that blocks every drain, a metrics
// certificate that would be ignored).
#include <catch2/catch.hpp>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

std::string chart_folder() { return testenv::source_dir() + "/charts/my-operator"; }

// `helm template` with flags that must fail: its output (stdout and stderr).
std::string refused(const std::string& flags) {
  const auto result =
      testenv::run(helm_binary() + " template my-operator " + shell_quote(chart_folder()) +
                   " --kube-version " + server_version() + " -n my-operator-system " + flags + " 2>&1");
  INFO(flags << ": " << result.output);
  CHECK_FALSE(result.ok());
  return result.output;
}

YAML::Node only_object(const std::string& rendered, const std::string& kind) {
  YAML::Node found;
  int count = 0;
  for (const auto& object : yaml_documents(rendered)) {
    if (object["kind"].as<std::string>("") != kind) continue;
    found = object;
    ++count;
  }
  INFO(kind);
  REQUIRE(count == 1);
  return found;
}

bool has_port(const YAML::Node& ports, const std::string& protocol, int port) {
  for (const auto& entry : ports)
    if (entry["protocol"].as<std::string>() == protocol && entry["port"].as<int>() == port) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "packaging: the chart's NetworkPolicy lets in the metrics, webhook and probe ports and out the API "
    "server "
    "and DNS",
    "[packaging][helm][networkpolicy]") {
  FixedNamespace system_namespace("my-operator-system");
  const std::string rendered = helm_template("-n my-operator-system");
  const YAML::Node policy = only_object(rendered, "NetworkPolicy");
  const YAML::Node deployment = only_object(rendered, "Deployment");
  // It selects exactly the operator's pods.
  const YAML::Node selector = policy["spec"]["podSelector"]["matchLabels"];
  const YAML::Node pod_labels = deployment["spec"]["template"]["metadata"]["labels"];
  REQUIRE(selector.size() > 0);
  for (const auto& label : selector)
    CHECK(pod_labels[label.first.as<std::string>()].as<std::string>("") == label.second.as<std::string>());
  CHECK(policy["spec"]["policyTypes"].size() == 2);

  const YAML::Node ingress = policy["spec"]["ingress"];
  REQUIRE(ingress.size() == 3);
  CHECK(has_port(ingress[0]["ports"], "TCP", 8443));
  CHECK(has_port(ingress[1]["ports"], "TCP", 9443));  // the API server calling the conversion webhook
  CHECK(has_port(ingress[2]["ports"], "TCP", 8081));

  const YAML::Node egress = policy["spec"]["egress"];
  REQUIRE(egress.size() == 2);
  CHECK(has_port(egress[0]["ports"], "TCP", 443));
  CHECK(has_port(egress[0]["ports"], "TCP", 6443));
  CHECK(has_port(egress[1]["ports"], "UDP", 53));
  CHECK(has_port(egress[1]["ports"], "TCP", 53));
  CHECK(egress[1]["to"][0]["podSelector"]["matchLabels"]["k8s-app"].as<std::string>() == "kube-dns");

  // The local control plane has no CNI, so nothing enforces it here: the API server accepts it.
  const auto result = server_dry_run(rendered);
  INFO(result.output);
  CHECK(result.ok());

  SECTION("the API server's CIDR and ports and extra egress are values") {
    const YAML::Node narrowed = only_object(
        helm_template(
            "-n my-operator-system --set networkPolicy.apiServer.cidrs={10.0.0.1/32} "
            "--set networkPolicy.apiServer.ports={8443} "
            "--set-json 'networkPolicy.extraEgress=[{\"ports\":[{\"protocol\":\"TCP\",\"port\":4318}]}]'"),
        "NetworkPolicy");
    const YAML::Node rules = narrowed["spec"]["egress"];
    REQUIRE(rules.size() == 3);
    CHECK(rules[0]["to"][0]["ipBlock"]["cidr"].as<std::string>() == "10.0.0.1/32");
    CHECK(has_port(rules[0]["ports"], "TCP", 8443));
    CHECK_FALSE(has_port(rules[0]["ports"], "TCP", 443));
    CHECK(has_port(rules[2]["ports"], "TCP", 4318));
  }
  SECTION("off, there is none") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set networkPolicy.enabled=false"));
    for (const auto& object : objects) CHECK(object["kind"].as<std::string>() != "NetworkPolicy");
  }
}

TEST_CASE("packaging: the operator container has an ephemeral-storage request and limit",
          "[packaging][helm]") {
  const YAML::Node deployment = only_object(helm_template("-n my-operator-system"), "Deployment");
  const YAML::Node resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"];
  CHECK(resources["requests"]["ephemeral-storage"].as<std::string>("") == "64Mi");
  CHECK(resources["limits"]["ephemeral-storage"].as<std::string>("") == "256Mi");
  const YAML::Node config_manager =
      YAML::LoadFile(testenv::source_dir() + "/config/manager/manager.yaml")["spec"]["template"]["spec"];
  CHECK(config_manager["containers"][0]["resources"]["limits"]["ephemeral-storage"].as<std::string>("") ==
        "256Mi");
}

TEST_CASE("packaging: the chart refuses a system namespace, its own namespace or a name twice as a tenant",
          "[packaging][helm][tenants]") {
  for (const std::string name : {"kube-system", "kube-public", "kube-node-lease", "default"}) {
    const std::string output = refused("--set tenants[0].name=" + name + " --set tenants[0].group=g");
    CHECK(output.find("tenants") != std::string::npos);
    CHECK(output.find("name") != std::string::npos);
  }
  CHECK(refused("--set tenants[0].name=my-operator-system --set tenants[0].group=g")
            .find("\"my-operator-system\" is the release namespace") != std::string::npos);
  CHECK(refused("--set tenants[0].name=team-a --set tenants[0].group=a --set tenants[1].name=team-a "
                "--set tenants[1].group=b")
            .find("\"team-a\" is given twice") != std::string::npos);
  // Two different tenants are fine.
  const auto objects =
      yaml_documents(helm_template("-n my-operator-system --set tenants[0].name=team-a --set "
                                   "tenants[0].group=a --set tenants[1].name=team-b "
                                   "--set tenants[1].group=b"));
  int namespaces = 0;
  for (const auto& object : objects) namespaces += object["kind"].as<std::string>() == "Namespace";
  CHECK(namespaces == 2);
}

TEST_CASE("packaging: the chart refuses a PodDisruptionBudget that blocks every drain",
          "[packaging][helm][pdb]") {
  CHECK(refused("--set podDisruptionBudget.minAvailable=2").find("must be below replicaCount (2)") !=
        std::string::npos);
  CHECK(refused("--set replicaCount=3 --set podDisruptionBudget.minAvailable=5")
            .find("must be below replicaCount") != std::string::npos);
  CHECK(refused("--set podDisruptionBudget.minAvailable=100%").find("minAvailable") != std::string::npos);
  CHECK(refused("--set podDisruptionBudget.maxUnavailable=0").find("maxUnavailable") != std::string::npos);
  CHECK(refused("--set podDisruptionBudget.maxUnavailable=0%").find("maxUnavailable") != std::string::npos);

  const YAML::Node budget =
      only_object(helm_template("-n my-operator-system --set podDisruptionBudget.maxUnavailable=1"),
                  "PodDisruptionBudget");
  CHECK(budget["spec"]["maxUnavailable"].as<int>() == 1);
  CHECK_FALSE(budget["spec"]["minAvailable"]);
  const YAML::Node by_default = only_object(helm_template("-n my-operator-system"), "PodDisruptionBudget");
  CHECK(by_default["spec"]["minAvailable"].as<int>() == 1);
}

TEST_CASE("packaging: the chart refuses a metrics certificate it would ignore",
          "[packaging][helm][metrics]") {
  CHECK(refused("--set metrics.certSecret=metrics-tls --set metrics.secure=false")
            .find("metrics.certSecret is set but metrics are not served over HTTPS") != std::string::npos);
  CHECK(refused("--set metrics.certSecret=metrics-tls --set metrics.enabled=false")
            .find("metrics.certSecret is set but metrics are not served over HTTPS") != std::string::npos);
  const YAML::Node deployment =
      only_object(helm_template("-n my-operator-system --set metrics.certSecret=metrics-tls"), "Deployment");
  CHECK(YAML::Dump(deployment).find("--metrics-cert-dir=") != std::string::npos);
}
