// What the platform reviews asked of the chart: the operator pods' NetworkPolicies, their
// ephemeral-storage bounds, the webhook Deployment's availability (spread, budget, priority, probes,
// a shutdown that leaves the Service first), and values that are refused with a message instead of
// rendering a cluster hazard (a system namespace as a tenant, a budget that blocks every drain, a
// metrics certificate that would be ignored).
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

YAML::Node named_object(const std::string& rendered, const std::string& kind, const std::string& name) {
  for (const auto& object : yaml_documents(rendered))
    if (object["kind"].as<std::string>("") == kind && object["metadata"]["name"].as<std::string>("") == name)
      return object;
  FAIL("no " << kind << "/" << name << " rendered");
  return {};
}

bool same_labels(const YAML::Node& left, const YAML::Node& right) {
  if (left.size() != right.size() || left.size() == 0) return false;
  for (const auto& entry : left)
    if (right[entry.first.as<std::string>()].as<std::string>("") != entry.second.as<std::string>())
      return false;
  return true;
}

bool has_port(const YAML::Node& ports, const std::string& protocol, int port) {
  for (const auto& entry : ports)
    if (entry["protocol"].as<std::string>() == protocol && entry["port"].as<int>() == port) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "packaging: the chart's NetworkPolicies let in only metrics from the monitoring namespace and the "
    "webhook "
    "port, and out the API server and DNS",
    "[packaging][helm][networkpolicy]") {
  FixedNamespace system_namespace("my-operator-system");
  const std::string rendered = helm_template("-n my-operator-system");
  const YAML::Node policy = named_object(rendered, "NetworkPolicy", "my-operator");
  const YAML::Node webhook_policy = named_object(rendered, "NetworkPolicy", "my-operator-webhook");
  // Each selects exactly its Deployment's pods.
  for (const auto& [policy_node, deployment_name] : std::vector<std::pair<YAML::Node, std::string>>{
           {policy, "my-operator"}, {webhook_policy, "my-operator-webhook"}}) {
    INFO(deployment_name);
    const YAML::Node selector = policy_node["spec"]["podSelector"]["matchLabels"];
    const YAML::Node pod_labels =
        named_object(rendered, "Deployment", deployment_name)["spec"]["template"]["metadata"]["labels"];
    REQUIRE(selector.size() > 0);
    for (const auto& label : selector)
      CHECK(pod_labels[label.first.as<std::string>()].as<std::string>("") == label.second.as<std::string>());
    CHECK(policy_node["spec"]["policyTypes"].size() == 2);
  }
  CHECK(named_object(rendered, "Deployment",
                     "my-operator")["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
            .as<std::string>() == "manager");

  // The manager: metrics from the monitoring namespace, nothing else; the probes come from the pod's own
  // node, which NetworkPolicy always allows.
  const YAML::Node ingress = policy["spec"]["ingress"];
  REQUIRE(ingress.size() == 1);
  CHECK(has_port(ingress[0]["ports"], "TCP", 8443));
  CHECK(ingress[0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            .as<std::string>() == "monitoring");
  const YAML::Node egress = policy["spec"]["egress"];
  REQUIRE(egress.size() == 2);
  CHECK(has_port(egress[0]["ports"], "TCP", 443));
  CHECK(has_port(egress[0]["ports"], "TCP", 6443));
  CHECK(has_port(egress[1]["ports"], "UDP", 53));
  CHECK(has_port(egress[1]["ports"], "TCP", 53));
  CHECK(egress[1]["to"][0]["podSelector"]["matchLabels"]["k8s-app"].as<std::string>() == "kube-dns");

  // The webhook pods: metrics as above, the webhook port (from anyone: the API server's address is the
  // cluster's), out only the API server.
  const YAML::Node webhook_ingress = webhook_policy["spec"]["ingress"];
  REQUIRE(webhook_ingress.size() == 2);
  CHECK(has_port(webhook_ingress[0]["ports"], "TCP", 8443));
  CHECK(has_port(webhook_ingress[1]["ports"], "TCP", 9443));
  CHECK_FALSE(webhook_ingress[1]["from"]);
  REQUIRE(webhook_policy["spec"]["egress"].size() == 1);
  CHECK(has_port(webhook_policy["spec"]["egress"][0]["ports"], "TCP", 443));

  // The local control plane has no CNI, so nothing enforces it here: the API server accepts it.
  const auto result = server_dry_run(rendered);
  INFO(result.output);
  CHECK(result.ok());

  SECTION("the API server's CIDR and ports and extra egress are values; the CIDRs also bound the webhook") {
    const std::string narrowed_text = helm_template(
        "-n my-operator-system --set networkPolicy.apiServer.cidrs={10.0.0.1/32} "
        "--set networkPolicy.apiServer.ports={8443} "
        "--set-json 'networkPolicy.extraEgress=[{\"ports\":[{\"protocol\":\"TCP\",\"port\":4318}]}]'");
    const YAML::Node rules = named_object(narrowed_text, "NetworkPolicy", "my-operator")["spec"]["egress"];
    REQUIRE(rules.size() == 3);
    CHECK(rules[0]["to"][0]["ipBlock"]["cidr"].as<std::string>() == "10.0.0.1/32");
    CHECK(has_port(rules[0]["ports"], "TCP", 8443));
    CHECK_FALSE(has_port(rules[0]["ports"], "TCP", 443));
    CHECK(has_port(rules[2]["ports"], "TCP", 4318));
    const YAML::Node webhook_from =
        named_object(narrowed_text, "NetworkPolicy", "my-operator-webhook")["spec"]["ingress"][1]["from"];
    REQUIRE(webhook_from.size() == 1);
    CHECK(webhook_from[0]["ipBlock"]["cidr"].as<std::string>() == "10.0.0.1/32");
  }
  SECTION("webhookFrom, metricsFrom and probesFrom are values; an empty metricsFrom means anyone") {
    const std::string text = helm_template(
        "-n my-operator-system --set-json 'networkPolicy.metricsFrom=[]' "
        "--set-json 'networkPolicy.webhookFrom=[{\"ipBlock\":{\"cidr\":\"192.0.2.10/32\"}}]' "
        "--set-json 'networkPolicy.probesFrom=[{\"ipBlock\":{\"cidr\":\"10.1.0.0/16\"}}]'");
    const YAML::Node rules = named_object(text, "NetworkPolicy", "my-operator-webhook")["spec"]["ingress"];
    REQUIRE(rules.size() == 3);
    CHECK_FALSE(rules[0]["from"]);
    CHECK(rules[1]["from"][0]["ipBlock"]["cidr"].as<std::string>() == "192.0.2.10/32");
    CHECK(has_port(rules[2]["ports"], "TCP", 8081));
    CHECK(rules[2]["from"][0]["ipBlock"]["cidr"].as<std::string>() == "10.1.0.0/16");
  }
  SECTION("off, there is none") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set networkPolicy.enabled=false"));
    for (const auto& object : objects) CHECK(object["kind"].as<std::string>() != "NetworkPolicy");
  }
}

TEST_CASE(
    "packaging: the webhook Deployment spreads over nodes, keeps a replica through drains, outranks "
    "workloads, "
    "leaves the Service before it stops and is hardened like the manager",
    "[packaging][helm][webhook]") {
  const std::string rendered = helm_template("-n my-operator-system");
  const YAML::Node deployment = named_object(rendered, "Deployment", "my-operator-webhook");
  const YAML::Node pod = deployment["spec"]["template"]["spec"];
  const YAML::Node container = pod["containers"][0];
  CHECK(deployment["spec"]["replicas"].as<int>() == 2);
  CHECK(deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"].as<int>() == 0);

  // Required spread (a single node still schedules it, unlike required anti-affinity).
  REQUIRE(pod["topologySpreadConstraints"].size() == 1);
  const YAML::Node spread = pod["topologySpreadConstraints"][0];
  CHECK(spread["topologyKey"].as<std::string>() == "kubernetes.io/hostname");
  CHECK(spread["whenUnsatisfiable"].as<std::string>() == "DoNotSchedule");
  CHECK(spread["maxSkew"].as<int>() == 1);
  CHECK(spread["nodeTaintsPolicy"].as<std::string>() == "Honor");
  CHECK(same_labels(spread["labelSelector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"]));
  CHECK_FALSE(pod["affinity"]);

  const YAML::Node budget = named_object(rendered, "PodDisruptionBudget", "my-operator-webhook");
  CHECK(budget["spec"]["minAvailable"].as<int>() == 1);
  CHECK(
      same_labels(budget["spec"]["selector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"]));
  CHECK(pod["priorityClassName"].as<std::string>() == "system-cluster-critical");

  // Readiness: "the webhook answers with a valid certificate"; out of the Service within 2 x 2 s.
  CHECK(container["readinessProbe"]["httpGet"]["path"].as<std::string>() == "/readyz");
  CHECK(container["readinessProbe"]["periodSeconds"].as<int>() *
            container["readinessProbe"]["failureThreshold"].as<int>() <=
        4);
  CHECK(container["readinessProbe"]["timeoutSeconds"].as<int>() == 1);
  CHECK(container["livenessProbe"]["httpGet"]["path"].as<std::string>() == "/healthz");
  // Stopping: first out of the endpoints (preStop), then SIGTERM, with time left for the shutdown.
  const int sleep_seconds = container["lifecycle"]["preStop"]["sleep"]["seconds"].as<int>();
  CHECK(sleep_seconds >= 3);
  CHECK(pod["terminationGracePeriodSeconds"].as<int>() > sleep_seconds + 10);

  // The manager's hardening, its own ServiceAccount, and resources sized for a webhook.
  const YAML::Node manager_pod =
      named_object(rendered, "Deployment", "my-operator")["spec"]["template"]["spec"];
  CHECK(YAML::Dump(pod["securityContext"]) == YAML::Dump(manager_pod["securityContext"]));
  CHECK(YAML::Dump(container["securityContext"]) ==
        YAML::Dump(manager_pod["containers"][0]["securityContext"]));
  CHECK(pod["serviceAccountName"].as<std::string>() == "my-operator-webhook");
  CHECK(container["resources"]["limits"]["memory"].as<std::string>() == "384Mi");
  CHECK(container["resources"]["requests"]["cpu"].as<std::string>() == "50m");

  // The API server admits all of it (priorityClassName is checked on the pods: the install test).
  FixedNamespace system_namespace("my-operator-system");
  const auto result = server_dry_run(rendered);
  INFO(result.output);
  CHECK(result.ok());

  SECTION("values that would block drains or cut the shutdown short are refused") {
    CHECK(refused("--set webhook.deployment.podDisruptionBudget.minAvailable=2")
              .find("must be below webhook.deployment.replicas (2)") != std::string::npos);
    CHECK(refused("--set webhook.deployment.terminationGracePeriodSeconds=5")
              .find("must be above webhook.preStopSleepSeconds") != std::string::npos);
    const std::string one = helm_template("-n my-operator-system --set webhook.deployment.replicas=1");
    for (const auto& object : yaml_documents(one))
      CHECK(object["metadata"]["name"].as<std::string>() + object["kind"].as<std::string>() !=
            "my-operator-webhookPodDisruptionBudget");
    const YAML::Node own_spread = named_object(
        helm_template(
            "-n my-operator-system --set-json "
            "'webhook.deployment.topologySpreadConstraints=[{\"maxSkew\":2,\"topologyKey\":\"zone\","
            "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]' --set webhook.deployment.priorityClassName="),
        "Deployment", "my-operator-webhook")["spec"]["template"]["spec"];
    CHECK(own_spread["topologySpreadConstraints"][0]["topologyKey"].as<std::string>() == "zone");
    CHECK_FALSE(own_spread["priorityClassName"]);
  }
}

TEST_CASE("packaging: the operator container has an ephemeral-storage request and limit",
          "[packaging][helm]") {
  const YAML::Node deployment =
      named_object(helm_template("-n my-operator-system"), "Deployment", "my-operator");
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
      named_object(helm_template("-n my-operator-system --set podDisruptionBudget.maxUnavailable=1"),
                   "PodDisruptionBudget", "my-operator");
  CHECK(budget["spec"]["maxUnavailable"].as<int>() == 1);
  CHECK_FALSE(budget["spec"]["minAvailable"]);
  const YAML::Node by_default =
      named_object(helm_template("-n my-operator-system"), "PodDisruptionBudget", "my-operator");
  CHECK(by_default["spec"]["minAvailable"].as<int>() == 1);
}

TEST_CASE("packaging: the chart refuses a metrics certificate it would ignore",
          "[packaging][helm][metrics]") {
  CHECK(refused("--set metrics.certSecret=metrics-tls --set metrics.secure=false")
            .find("metrics.certSecret is set but metrics are not served over HTTPS") != std::string::npos);
  CHECK(refused("--set metrics.certSecret=metrics-tls --set metrics.enabled=false")
            .find("metrics.certSecret is set but metrics are not served over HTTPS") != std::string::npos);
  const YAML::Node deployment =
      named_object(helm_template("-n my-operator-system --set metrics.certSecret=metrics-tls"), "Deployment",
                   "my-operator");
  CHECK(YAML::Dump(deployment).find("--metrics-cert-dir=") != std::string::npos);
}
