// The Helm chart: `helm lint` passes, values.schema.json refuses bad values, and what
// `helm template` renders is accepted by the API server (server-side dry run, strict field
// validation), with the defaults and with every toggle on. The rendered RBAC follows the
// least-privilege rules and the rendered CRD is config/crd's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "../../unit/packaging/rbac_policy.h"
#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

std::string chart_folder() { return testenv::source_dir() + "/charts/my-operator"; }

// Values that turn every feature of the chart on; the tenant is the given namespace.
std::string all_features_values(const std::string& tenant) {
  return "image:\n"
         "  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
         "watchNamespaces: [" +
         tenant +
         "]\n"
         "metrics:\n"
         "  certSecret: metrics-tls\n"
         "  serviceMonitor: {enabled: true, labels: {release: prometheus}}\n"
         "  prometheusRule: {enabled: true}\n"
         "  grafanaDashboard: {enabled: true}\n"
         "nodeSelector: {kubernetes.io/os: linux}\n"
         "tolerations: [{key: dedicated, operator: Equal, value: operators, effect: NoSchedule}]\n"
         "affinity:\n"
         "  nodeAffinity:\n"
         "    requiredDuringSchedulingIgnoredDuringExecution:\n"
         "      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: "
         "[amd64, arm64]}]}]\n"
         "extraEnv: [{name: MYOP_LOG_LEVEL, value: debug}]\n"
         "tracing: {otlpEndpoint: \"http://otel-collector.observability:4318\", samplingRatio: 0.25}\n"
         "fleet:\n"
         "  kubeconfigSecrets: {enabled: true}\n"
         "  clusterProfiles:\n"
         "    enabled: true\n"
         "    providers: [{name: secretreader, execConfig: {apiVersion: client.authentication.k8s.io/v1, "
         "command: /plugins/secretreader-plugin}}]\n"
         "    pluginVolumes: [{name: plugins, emptyDir: {}}]\n"
         "    pluginVolumeMounts: [{name: plugins, mountPath: /plugins, readOnly: true}]\n"
         "tenants:\n"
         "  - name: " +
         tenant +
         "\n"
         "    group: " +
         tenant +
         "-developers\n"
         "    allowDNS: true\n"
         "    quota: {requests.cpu: \"8\", pods: 100}\n"
         "    limitRange: {max: {cpu: \"2\"}}\n";
}

std::vector<YAML::Node> objects_of_kind(const std::vector<YAML::Node>& objects, const std::string& kind) {
  std::vector<YAML::Node> found;
  for (const auto& object : objects)
    if (object["kind"].as<std::string>("") == kind) found.push_back(object);
  return found;
}

// The object of `kind` named `name` among `objects`, or nullopt.
std::optional<YAML::Node> find_object(const std::vector<YAML::Node>& objects, const std::string& kind,
                                      const std::string& name) {
  for (const auto& object : objects)
    if (object["kind"].as<std::string>("") == kind && object["metadata"]["name"].as<std::string>("") == name)
      return object;
  return std::nullopt;
}

// The arguments of the first container of the Deployment `name` among `objects`.
std::set<std::string> deployment_args(const std::vector<YAML::Node>& objects, const std::string& name) {
  const auto deployment = find_object(objects, "Deployment", name);
  REQUIRE(deployment);
  std::set<std::string> args;
  for (const auto& arg : (*deployment)["spec"]["template"]["spec"]["containers"][0]["args"])
    args.insert(arg.as<std::string>());
  return args;
}

// Structural equality of two YAML trees (scalars compared as text).
bool same_yaml(const YAML::Node& left, const YAML::Node& right) {
  if (left.Type() != right.Type()) return false;
  switch (left.Type()) {
    case YAML::NodeType::Scalar:
      return left.Scalar() == right.Scalar();
    case YAML::NodeType::Sequence:
      if (left.size() != right.size()) return false;
      for (std::size_t i = 0; i < left.size(); ++i)
        if (!same_yaml(left[i], right[i])) return false;
      return true;
    case YAML::NodeType::Map:
      if (left.size() != right.size()) return false;
      for (const auto& entry : left) {
        const YAML::Node other = right[entry.first.Scalar()];
        if (!other || !same_yaml(entry.second, other)) return false;
      }
      return true;
    default:
      return true;
  }
}

}  // namespace

TEST_CASE("packaging: helm lint passes with the default values and with every feature on",
          "[packaging][helm]") {
  // Against the control plane's version, so the deprecation checks are those of the Kubernetes we run.
  const std::string lint_command =
      helm_binary() + " lint --strict --kube-version " + server_version() + " " + shell_quote(chart_folder());
  const auto lint = testenv::run(lint_command);
  INFO(lint.output);
  CHECK(lint.ok());
  TemporaryFolder folder("myop-helm-values");
  write_text(folder.path() / "values.yaml", all_features_values("team-a"));
  const auto lint_all =
      testenv::run(lint_command + " -f " + shell_quote((folder.path() / "values.yaml").string()));
  INFO(lint_all.output);
  CHECK(lint_all.ok());
}

// helm built without its Makefile's k8sVersion ldflags assumes Kubernetes 1.20, and the chart's
// kubeVersion (>=1.30) then fails `helm template` without --kube-version, as users run it.
TEST_CASE("packaging: helm knows a current Kubernetes without --kube-version", "[packaging][helm]") {
  const auto rendered = testenv::run(helm_binary() + " template my-operator " + shell_quote(chart_folder()));
  INFO(rendered.output);
  CHECK(rendered.ok());
  const auto version = testenv::run(helm_binary() + " version --template '{{.Version}}'");
  INFO(version.output);
  CHECK(version.output.rfind("v3.", 0) == 0);
}

TEST_CASE("packaging: values.schema.json refuses values the operator cannot run with", "[packaging][helm]") {
  for (const std::string& bad :
       {std::string("--set image.tag=latest"), std::string("--set image.digest=sha256:abc"),
        std::string("--set featureFlags.orphanPolicy=destroy"), std::string("--set logging.format=xml"),
        std::string("--set replicaCount=-1"), std::string("--set tracing.samplingRatio=1.5"),
        std::string("--set tracing.otlpEndpoint=otel-collector:4318"),
        std::string("--set tenants[0].name=Team_A --set tenants[0].group=g"),
        std::string("--set unknownKey=1")}) {
    const auto result =
        testenv::run(helm_binary() + " lint --strict " + shell_quote(chart_folder()) + " " + bad);
    INFO(bad << ": " << result.output);
    CHECK_FALSE(result.ok());
  }
  const auto no_leader =
      testenv::run(helm_binary() + " template " + shell_quote(chart_folder()) + " --kube-version " +
                   server_version() + " --set replicaCount=2 --set leaderElection.enabled=false");
  INFO(no_leader.output);
  CHECK_FALSE(no_leader.ok());
  CHECK(no_leader.output.find("needs leaderElection.enabled") != std::string::npos);
}

TEST_CASE("packaging: tracing values render --otlp-endpoint and --trace-sampling-ratio, and none by default",
          "[packaging][helm][trace]") {
  const std::string defaults = helm_template("-n my-operator-system");
  CHECK(defaults.find("--otlp-endpoint") == std::string::npos);
  CHECK(defaults.find("--trace-sampling-ratio") == std::string::npos);
  // --set keeps a decimal as a string: the schema takes it, the flag reads it.
  const std::string traced = helm_template(
      "-n my-operator-system --set tracing.otlpEndpoint=http://otel:4318 --set tracing.samplingRatio=0.25");
  CHECK(traced.find("- --otlp-endpoint=http://otel:4318\n") != std::string::npos);
  CHECK(traced.find("- --trace-sampling-ratio=0.25\n") != std::string::npos);
}

TEST_CASE("packaging: the API server accepts the chart rendered with the default values",
          "[packaging][helm]") {
  FixedNamespace system_namespace("my-operator-system");
  const std::string rendered = helm_template("-n my-operator-system");
  const auto objects = yaml_documents(rendered);
  CHECK(objects_of_kind(objects, "ServiceMonitor").empty());
  // The manager's and the conversion webhook's.
  CHECK(objects_of_kind(objects, "Deployment").size() == 2);
  const auto result = server_dry_run(rendered);
  INFO(result.output);
  CHECK(result.ok());
}

TEST_CASE("packaging: the API server accepts the chart rendered with every feature on", "[packaging][helm]") {
  install_prometheus_operator_crds();
  FixedNamespace system_namespace("my-operator-system");
  testenv::ScopedNamespace tenant("pkg-tenant");
  TemporaryFolder folder("myop-helm-values");
  write_text(folder.path() / "values.yaml", all_features_values(tenant.name()));
  const std::string rendered =
      helm_template("-n my-operator-system -f " + shell_quote((folder.path() / "values.yaml").string()));
  const auto objects = yaml_documents(rendered);
  for (const char* kind : {"ServiceMonitor", "PrometheusRule", "ResourceQuota", "LimitRange", "Namespace"}) {
    INFO(kind);
    CHECK(objects_of_kind(objects, kind).size() == 1);
  }
  // The manager's and the webhook Deployment's.
  CHECK(objects_of_kind(objects, "PodDisruptionBudget").size() == 2);
  // The tenant's, the manager pods' and the webhook pods'.
  CHECK(objects_of_kind(objects, "NetworkPolicy").size() == 3);
  const auto result = server_dry_run(rendered);
  INFO(result.output);
  CHECK(result.ok());

  SECTION("a field the schemas do not know is refused, so the dry run can fail") {
    const auto broken = server_dry_run(rendered +
                                       "\n---\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
                                       "metadata: {name: broken, namespace: my-operator-system}\n"
                                       "spec: {selector: {}, endpoints: [{port: metrics, notAField: 1}]}\n");
    CHECK_FALSE(broken.ok());
  }
}

TEST_CASE(
    "packaging: the rendered RBAC has no wildcard and no cluster-admin binding, and grants exactly what the "
    "operator uses",
    "[packaging][helm][rbac]") {
  SECTION("watching all namespaces: one ClusterRole") {
    const auto objects = yaml_documents(helm_template("-n my-operator-system"));
    const auto violations = rbac_violations(objects);
    for (const auto& violation : violations) UNSCOPED_INFO(violation);
    CHECK(violations.empty());
    bool found_manager = false;
    for (const auto& role : objects_of_kind(objects, "ClusterRole")) {
      if (role["metadata"]["name"].as<std::string>() != "my-operator-manager") continue;
      found_manager = true;
      CHECK(granted(role) == expected_manager_grants());
    }
    CHECK(found_manager);
    for (const auto& role : objects_of_kind(objects, "Role")) {
      const std::string name = role["metadata"]["name"].as<std::string>();
      INFO(name);
      if (name == "my-operator-webhook-secret")
        CHECK(all_grants(role) == expected_webhook_secret_grants("my-operator-webhook-cert"));
      else
        CHECK((name == "my-operator-leader-election" && granted(role) == expected_own_namespace_grants()));
    }
    // The webhook's certificate rights go to the webhook Deployment's ServiceAccount, the manager's to
    // the manager's; the metrics reviews to both, as both serve /metrics.
    const std::map<std::string, std::vector<std::string>> subjects = {
        {"my-operator-manager", {"my-operator"}},
        {"my-operator-leader-election", {"my-operator"}},
        {"my-operator-storage-migration", {"my-operator"}},
        {"my-operator-webhook", {"my-operator-webhook"}},
        {"my-operator-webhook-secret", {"my-operator-webhook"}},
        {"my-operator-metrics-auth-rolebinding", {"my-operator", "my-operator-webhook"}}};
    for (const auto& [name, accounts] : subjects) {
      INFO(name);
      std::optional<YAML::Node> binding = find_object(objects, "ClusterRoleBinding", name);
      if (!binding) binding = find_object(objects, "RoleBinding", name);
      REQUIRE(binding);
      std::vector<std::string> bound;
      for (const auto& subject : (*binding)["subjects"]) {
        CHECK(subject["kind"].as<std::string>() == "ServiceAccount");
        CHECK(subject["namespace"].as<std::string>() == "my-operator-system");
        bound.push_back(subject["name"].as<std::string>());
      }
      CHECK(bound == accounts);
    }
    // Every ClusterRole is one we know, granting exactly what its user needs.
    for (const auto& role : objects_of_kind(objects, "ClusterRole")) {
      const std::string name = role["metadata"]["name"].as<std::string>();
      INFO(name);
      if (name == "my-operator-metrics-auth-role") {
        CHECK(granted(role) == expected_metrics_auth_grants());
        CHECK(granted_non_resource(role).empty());
      } else if (name == "my-operator-webhook") {
        CHECK(all_grants(role) == expected_webhook_crd_grants());
      } else if (name == "my-operator-storage-migration") {
        CHECK(all_grants(role) == expected_storage_migration_grants());
      } else if (name == "my-operator-metrics-reader") {
        CHECK(granted(role).empty());
        CHECK(granted_non_resource(role) == std::set<std::string>{"/metrics:get"});
      } else {
        CHECK((name == "my-operator-manager" || name == "my-operator-myresource-viewer" ||
               name == "my-operator-myresource-editor"));
        CHECK(granted_non_resource(role).empty());
      }
    }
  }
  SECTION("watching listed namespaces: a Role in each, no cluster-wide manager rules") {
    TemporaryFolder folder("myop-helm-values");
    write_text(folder.path() / "values.yaml", all_features_values("team-a"));
    const auto objects = yaml_documents(
        helm_template("-n my-operator-system -f " + shell_quote((folder.path() / "values.yaml").string())));
    CHECK(rbac_violations(objects).empty());
    for (const auto& role : objects_of_kind(objects, "ClusterRole")) {
      CHECK(role["metadata"]["name"].as<std::string>() != "my-operator-manager");
      // A namespaced operator cannot list every MyResource, so it does not migrate them.
      CHECK(role["metadata"]["name"].as<std::string>() != "my-operator-storage-migration");
    }
    int manager_roles = 0;
    for (const auto& role : objects_of_kind(objects, "Role")) {
      if (role["metadata"]["name"].as<std::string>() != "my-operator-manager") continue;
      ++manager_roles;
      CHECK(role["metadata"]["namespace"].as<std::string>() == "team-a");
      CHECK(granted(role) == expected_manager_grants());
    }
    CHECK(manager_roles == 1);
  }
}

TEST_CASE(
    "packaging: metrics.secure renders --metrics-secure, its RBAC and an HTTPS ServiceMonitor, and off none "
    "of it",
    "[packaging][helm][rbac]") {
  auto args_of = [](const std::vector<YAML::Node>& objects) {
    std::set<std::string> args;
    for (const auto& deployment : objects)
      if (deployment["kind"].as<std::string>("") == "Deployment")
        for (const auto& arg : deployment["spec"]["template"]["spec"]["containers"][0]["args"])
          args.insert(arg.as<std::string>());
    return args;
  };

  SECTION("secure (the default), self-signed: served, but a ServiceMonitor is refused") {
    const auto objects = yaml_documents(helm_template("-n my-operator-system"));
    const auto args = args_of(objects);
    CHECK(args.count("--metrics-secure") == 1);
    CHECK(args.count("--metrics-bind-address=:8443") == 1);
    for (const auto& arg : args) CHECK(arg.rfind("--metrics-cert-dir", 0) != 0);
    const auto found_binding =
        find_object(objects, "ClusterRoleBinding", "my-operator-metrics-auth-rolebinding");
    REQUIRE(found_binding);
    const YAML::Node binding = *found_binding;
    CHECK(binding["roleRef"]["name"].as<std::string>() == "my-operator-metrics-auth-role");
    CHECK(binding["subjects"][0]["name"].as<std::string>() == "my-operator");
    CHECK(binding["subjects"][0]["namespace"].as<std::string>() == "my-operator-system");
    CHECK(find_object(objects, "ClusterRole", "my-operator-metrics-reader"));
    // Nothing could verify the certificate made at start: no ServiceMonitor skips verification.
    const auto refused = testenv::run(helm_binary() + " template my-operator " +
                                      shell_quote(testenv::source_dir() + "/charts/my-operator") +
                                      " -n my-operator-system --set metrics.serviceMonitor.enabled=true");
    INFO(refused.output);
    CHECK_FALSE(refused.ok());
    CHECK(refused.output.find("needs metrics.certSecret") != std::string::npos);
  }
  SECTION("secure with a certificate Secret: mounted, served, verified by the ServiceMonitor") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set metrics.serviceMonitor.enabled=true --set "
                                     "metrics.certSecret=metrics-tls"));
    CHECK(args_of(objects).count("--metrics-cert-dir=/etc/my-operator/metrics-certs") == 1);
    const auto deployment = find_object(objects, "Deployment", "my-operator");
    REQUIRE(deployment);
    const YAML::Node pod = (*deployment)["spec"]["template"]["spec"];
    bool mounted = false;
    for (const auto& mount : pod["containers"][0]["volumeMounts"])
      mounted = mounted || mount["mountPath"].as<std::string>("") == "/etc/my-operator/metrics-certs";
    CHECK(mounted);
    bool volume = false;
    for (const auto& item : pod["volumes"])
      volume =
          volume || (item["secret"] && item["secret"]["secretName"].as<std::string>("") == "metrics-tls");
    CHECK(volume);
    const auto monitor = find_object(objects, "ServiceMonitor", "my-operator");
    REQUIRE(monitor);
    const YAML::Node endpoint = (*monitor)["spec"]["endpoints"][0];
    CHECK(endpoint["scheme"].as<std::string>("") == "https");
    const YAML::Node tls = endpoint["tlsConfig"];
    CHECK_FALSE(tls["insecureSkipVerify"]);
    CHECK(tls["serverName"].as<std::string>("") == "my-operator-metrics.my-operator-system.svc");
    CHECK(tls["ca"]["secret"]["name"].as<std::string>("") == "metrics-tls");
    CHECK(tls["ca"]["secret"]["key"].as<std::string>("") == "ca.crt");
    // The token of a ServiceAccount of its own, bound to the metrics reader role and nothing else.
    CHECK_FALSE(endpoint["bearerTokenFile"]);
    CHECK(endpoint["authorization"]["type"].as<std::string>("") == "Bearer");
    CHECK(endpoint["authorization"]["credentials"]["name"].as<std::string>("") ==
          "my-operator-metrics-scraper-token");
    CHECK(endpoint["authorization"]["credentials"]["key"].as<std::string>("") == "token");
    const auto token = find_object(objects, "Secret", "my-operator-metrics-scraper-token");
    REQUIRE(token);
    CHECK((*token)["type"].as<std::string>("") == "kubernetes.io/service-account-token");
    CHECK((*token)["metadata"]["annotations"]["kubernetes.io/service-account.name"].as<std::string>("") ==
          "my-operator-metrics-scraper");
    CHECK(find_object(objects, "ServiceAccount", "my-operator-metrics-scraper"));
    const auto scraper = find_object(objects, "ClusterRoleBinding", "my-operator-metrics-scraper");
    REQUIRE(scraper);
    CHECK((*scraper)["roleRef"]["name"].as<std::string>("") == "my-operator-metrics-reader");
    CHECK((*scraper)["subjects"][0]["name"].as<std::string>("") == "my-operator-metrics-scraper");

    // A token Secret of the user's instead: sent, and no scraper identity of the chart's.
    const auto own_token = yaml_documents(helm_template(
        "-n my-operator-system --set metrics.serviceMonitor.enabled=true --set "
        "metrics.certSecret=metrics-tls --set metrics.serviceMonitor.tokenSecret=prometheus-token"));
    const auto own_monitor = find_object(own_token, "ServiceMonitor", "my-operator");
    REQUIRE(own_monitor);
    CHECK((*own_monitor)["spec"]["endpoints"][0]["authorization"]["credentials"]["name"].as<std::string>(
              "") == "prometheus-token");
    CHECK_FALSE(find_object(own_token, "ServiceAccount", "my-operator-metrics-scraper"));
    CHECK_FALSE(find_object(own_token, "ClusterRoleBinding", "my-operator-metrics-scraper"));
  }
  SECTION("not secure: plain HTTP, and no review or reader rights") {
    const auto objects = yaml_documents(helm_template(
        "-n my-operator-system --set metrics.serviceMonitor.enabled=true --set metrics.secure=false"));
    CHECK(args_of(objects).count("--metrics-secure") == 0);
    CHECK_FALSE(find_object(objects, "ClusterRole", "my-operator-metrics-auth-role"));
    CHECK_FALSE(find_object(objects, "ClusterRoleBinding", "my-operator-metrics-auth-rolebinding"));
    CHECK_FALSE(find_object(objects, "ClusterRole", "my-operator-metrics-reader"));
    const auto monitor = find_object(objects, "ServiceMonitor", "my-operator");
    REQUIRE(monitor);
    CHECK_FALSE((*monitor)["spec"]["endpoints"][0]["scheme"]);
  }
}

TEST_CASE(
    "packaging: webhook values render the conversion webhook's Deployment, Service, flags, port and RBAC, "
    "cert-manager in place of the operator's own CA, the manager's pods serving it when asked, and none of "
    "it when off",
    "[packaging][helm][webhook]") {
  auto container_of = [](const std::vector<YAML::Node>& objects, const std::string& deployment_name) {
    const auto deployment = find_object(objects, "Deployment", deployment_name);
    REQUIRE(deployment);
    return (*deployment)["spec"]["template"]["spec"]["containers"][0];
  };
  auto has_port = [&container_of](const std::vector<YAML::Node>& objects, const std::string& deployment_name,
                                  const std::string& name, int port) {
    for (const auto& entry : container_of(objects, deployment_name)["ports"])
      if (entry["name"].as<std::string>("") == name) return entry["containerPort"].as<int>() == port;
    return false;
  };
  auto policy_ports = [](const std::vector<YAML::Node>& objects, const std::string& policy_name) {
    std::set<int> ports;
    const auto policy = find_object(objects, "NetworkPolicy", policy_name);
    REQUIRE(policy);
    for (const auto& rule : (*policy)["spec"]["ingress"])
      for (const auto& port : rule["ports"]) ports.insert(port["port"].as<int>());
    return ports;
  };
  auto pod_labels = [](const std::vector<YAML::Node>& objects, const std::string& deployment_name) {
    const auto deployment = find_object(objects, "Deployment", deployment_name);
    REQUIRE(deployment);
    return (*deployment)["spec"]["template"]["metadata"]["labels"];
  };
  // Whether a label selector (matchLabels or a Service's map) selects pods with these labels.
  auto selects = [](const YAML::Node& selector, const YAML::Node& labels) {
    for (const auto& entry : selector)
      if (labels[entry.first.as<std::string>()].as<std::string>("") != entry.second.as<std::string>())
        return false;
    return selector.size() > 0;
  };

  SECTION(
      "by default: a Deployment of its own, with the operator's own CA, its Secret and the CRD's caBundle") {
    const auto objects = yaml_documents(helm_template("-n my-operator-system"));
    const auto service = find_object(objects, "Service", "my-operator-webhook");
    REQUIRE(service);
    // Conversions go to ready pods only.
    CHECK_FALSE((*service)["spec"]["publishNotReadyAddresses"].as<bool>(false));
    CHECK((*service)["spec"]["ports"][0]["port"].as<int>() == 443);
    CHECK((*service)["spec"]["ports"][0]["targetPort"].as<std::string>() == "webhook");
    const YAML::Node service_selector = (*service)["spec"]["selector"];
    CHECK(same_yaml(
        service_selector,
        (*find_object(objects, "Deployment", "my-operator-webhook"))["spec"]["selector"]["matchLabels"]));
    // The Service never picks the manager's pods, which serve no webhook.
    CHECK_FALSE(selects(service_selector, pod_labels(objects, "my-operator")));
    CHECK(selects(service_selector, pod_labels(objects, "my-operator-webhook")));
    const auto args = deployment_args(objects, "my-operator-webhook");
    for (const char* flag :
         {"--webhook-only", "--webhook-bind-address=:9443", "--webhook-service=my-operator-webhook",
          "--webhook-secret=my-operator-webhook-cert", "--webhook-ca-secret=my-operator-webhook-cert-ca",
          "--webhook-cert-validity=8760h", "--webhook-ca-validity=87600h",
          "--webhook-crds=myresources.myorg.io", "--health-probe-bind-address=:8081", "--metrics-secure"}) {
      INFO(flag);
      CHECK(args.count(flag) == 1);
    }
    // A webhook-only process refuses the controller's flags.
    for (const auto& arg : args) {
      INFO(arg);
      CHECK(arg.rfind("--leader-elect", 0) != 0);
      CHECK(arg.rfind("--sharding", 0) != 0);
    }
    CHECK(has_port(objects, "my-operator-webhook", "webhook", 9443));
    CHECK(policy_ports(objects, "my-operator-webhook").count(9443) == 1);
    // The manager serves no webhook: no flag, no port, no ingress to it.
    for (const auto& arg : deployment_args(objects, "my-operator")) CHECK(arg.rfind("--webhook", 0) != 0);
    CHECK_FALSE(has_port(objects, "my-operator", "webhook", 9443));
    CHECK(policy_ports(objects, "my-operator").count(9443) == 0);
    const auto crd_role = find_object(objects, "ClusterRole", "my-operator-webhook");
    REQUIRE(crd_role);
    CHECK(all_grants(*crd_role) == expected_webhook_crd_grants());
    const auto secret_role = find_object(objects, "Role", "my-operator-webhook-secret");
    REQUIRE(secret_role);
    CHECK(all_grants(*secret_role) == expected_webhook_secret_grants("my-operator-webhook-cert"));
    for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
             {"ClusterRoleBinding", "my-operator-webhook"}, {"RoleBinding", "my-operator-webhook-secret"}}) {
      const auto binding = find_object(objects, kind, name);
      REQUIRE(binding);
      REQUIRE((*binding)["subjects"].size() == 1);
      CHECK((*binding)["subjects"][0]["name"].as<std::string>() == "my-operator-webhook");
    }
    CHECK(find_object(objects, "ServiceAccount", "my-operator-webhook"));
    CHECK(objects_of_kind(objects, "Certificate").empty());
  }
  SECTION("webhook.certManager: a Certificate mounted as the webhook's files, its CA injected into the CRD") {
    const auto objects = yaml_documents(helm_template(
        "-n my-operator-system --set webhook.certManager.enabled=true --set webhook.port=10250"));
    const auto certificate = find_object(objects, "Certificate", "my-operator-webhook");
    REQUIRE(certificate);
    CHECK((*certificate)["spec"]["secretName"].as<std::string>() == "my-operator-webhook-tls");
    std::set<std::string> names;
    for (const auto& name : (*certificate)["spec"]["dnsNames"]) names.insert(name.as<std::string>());
    CHECK(names == std::set<std::string>{"my-operator-webhook.my-operator-system.svc",
                                         "my-operator-webhook.my-operator-system.svc.cluster.local"});
    // The chart's own CA signs it: selfSigned Issuer -> CA Certificate -> CA Issuer -> this one. The
    // injected caBundle is then the CA, the same across renewals of the serving certificate.
    CHECK((*certificate)["spec"]["issuerRef"]["kind"].as<std::string>() == "Issuer");
    CHECK((*certificate)["spec"]["issuerRef"]["name"].as<std::string>() == "my-operator-webhook-ca");
    CHECK((*certificate)["spec"]["privateKey"]["rotationPolicy"].as<std::string>() == "Always");
    const auto ca_issuer = find_object(objects, "Issuer", "my-operator-webhook-ca");
    REQUIRE(ca_issuer);
    CHECK((*ca_issuer)["spec"]["ca"]["secretName"].as<std::string>("") == "my-operator-webhook-ca");
    const auto ca = find_object(objects, "Certificate", "my-operator-webhook-ca");
    REQUIRE(ca);
    CHECK((*ca)["spec"]["isCA"].as<bool>(false));
    CHECK((*ca)["spec"]["secretName"].as<std::string>() == "my-operator-webhook-ca");
    CHECK((*ca)["spec"]["duration"].as<std::string>() == "87600h");
    CHECK((*ca)["spec"]["privateKey"]["rotationPolicy"].as<std::string>() == "Never");  // renewed, same key
    CHECK((*ca)["spec"]["issuerRef"]["name"].as<std::string>() == "my-operator-webhook-selfsigned");
    const auto self_signed = find_object(objects, "Issuer", "my-operator-webhook-selfsigned");
    REQUIRE(self_signed);
    CHECK((*self_signed)["spec"]["selfSigned"].IsMap());
    CHECK_FALSE(
        find_object(objects, "Issuer", "my-operator-webhook"));  // the serving certificate's own CA no more
    const auto crds = objects_of_kind(objects, "CustomResourceDefinition");
    REQUIRE(crds.size() == 1);
    CHECK(crds[0]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as<std::string>("") ==
          "my-operator-system/my-operator-webhook");
    const auto args = deployment_args(objects, "my-operator-webhook");
    CHECK(args.count("--webhook-bind-address=:10250") == 1);
    CHECK(args.count("--webhook-cert-dir=/etc/my-operator/webhook-certs") == 1);
    CHECK(args.count("--webhook-secret=my-operator-webhook-cert") == 0);
    CHECK(has_port(objects, "my-operator-webhook", "webhook", 10250));
    CHECK(policy_ports(objects, "my-operator-webhook").count(10250) == 1);
    bool mounted = false;
    for (const auto& mount : container_of(objects, "my-operator-webhook")["volumeMounts"])
      mounted |= mount["name"].as<std::string>() == "webhook-certs" &&
                 mount["mountPath"].as<std::string>() == "/etc/my-operator/webhook-certs";
    CHECK(mounted);
    for (const auto& mount : container_of(objects, "my-operator")["volumeMounts"])
      CHECK(mount["name"].as<std::string>() != "webhook-certs");
    // cert-manager fills the caBundle: the operator needs neither the CRD nor a Secret of its own.
    CHECK_FALSE(find_object(objects, "ClusterRole", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "Role", "my-operator-webhook-secret"));

    const auto own_issuer =
        yaml_documents(helm_template("-n my-operator-system --set webhook.certManager.enabled=true --set "
                                     "webhook.certManager.issuerRef.kind=ClusterIssuer --set "
                                     "webhook.certManager.issuerRef.name=internal-ca"));
    for (const char* name :
         {"my-operator-webhook", "my-operator-webhook-ca", "my-operator-webhook-selfsigned"})
      CHECK_FALSE(find_object(own_issuer, "Issuer", name));
    CHECK_FALSE(find_object(own_issuer, "Certificate", "my-operator-webhook-ca"));
    const auto issued = find_object(own_issuer, "Certificate", "my-operator-webhook");
    REQUIRE(issued);
    CHECK((*issued)["spec"]["issuerRef"]["kind"].as<std::string>() == "ClusterIssuer");
    CHECK((*issued)["spec"]["issuerRef"]["name"].as<std::string>() == "internal-ca");
  }
  SECTION("webhook.deployment.enabled=false: the manager's pods serve it, ready when the webhook is") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set webhook.deployment.enabled=false"));
    CHECK_FALSE(find_object(objects, "Deployment", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "PodDisruptionBudget", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "ServiceAccount", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "NetworkPolicy", "my-operator-webhook"));
    const auto service = find_object(objects, "Service", "my-operator-webhook");
    REQUIRE(service);
    CHECK_FALSE((*service)["spec"]["publishNotReadyAddresses"].as<bool>(false));
    CHECK(same_yaml((*service)["spec"]["selector"],
                    (*find_object(objects, "Deployment", "my-operator"))["spec"]["selector"]["matchLabels"]));
    const auto args = deployment_args(objects, "my-operator");
    for (const char* flag : {"--webhook-bind-address=:9443", "--webhook-service=my-operator-webhook",
                             "--webhook-secret=my-operator-webhook-cert"}) {
      INFO(flag);
      CHECK(args.count(flag) == 1);
    }
    CHECK(args.count("--webhook-only") == 0);
    CHECK(has_port(objects, "my-operator", "webhook", 9443));
    CHECK(policy_ports(objects, "my-operator").count(9443) == 1);
    // Readiness is the webhook's, not the caches': listing old objects may itself need a conversion.
    const YAML::Node container = container_of(objects, "my-operator");
    CHECK(container["readinessProbe"]["httpGet"]["path"].as<std::string>() == "/readyz/webhook");
    CHECK(container["readinessProbe"]["periodSeconds"].as<int>() <= 2);
    CHECK(container["lifecycle"]["preStop"]["sleep"]["seconds"].as<int>() > 0);
    for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
             {"ClusterRoleBinding", "my-operator-webhook"}, {"RoleBinding", "my-operator-webhook-secret"}}) {
      const auto binding = find_object(objects, kind, name);
      REQUIRE(binding);
      CHECK((*binding)["subjects"][0]["name"].as<std::string>() == "my-operator");
    }
    // And with the webhook on its own, the manager's readiness stays "caches synced".
    const auto split = yaml_documents(helm_template("-n my-operator-system"));
    CHECK(container_of(split, "my-operator")["readinessProbe"]["httpGet"]["path"].as<std::string>() ==
          "/readyz");
    CHECK_FALSE(container_of(split, "my-operator")["lifecycle"]);
  }
  SECTION("webhook.enabled=false: no Deployment, Service, flag, port or RBAC; the CRD calls webhook.url") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set webhook.enabled=false --set "
                                     "webhook.url=https://webhook.example:9443/convert"));
    const auto crd = find_object(objects, "CustomResourceDefinition", "myresources.myorg.io");
    REQUIRE(crd);
    const YAML::Node client_config = (*crd)["spec"]["conversion"]["webhook"]["clientConfig"];
    CHECK(client_config["url"].as<std::string>("") == "https://webhook.example:9443/convert");
    CHECK_FALSE(client_config["service"]);
    CHECK_FALSE(find_object(objects, "Service", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "Deployment", "my-operator-webhook"));
    for (const auto& arg : deployment_args(objects, "my-operator"))
      CHECK(arg.rfind("--webhook", 0) == std::string::npos);
    CHECK_FALSE(has_port(objects, "my-operator", "webhook", 9443));
    CHECK(policy_ports(objects, "my-operator").count(9443) == 0);
    CHECK_FALSE(find_object(objects, "ClusterRole", "my-operator-webhook"));
    CHECK_FALSE(find_object(objects, "Role", "my-operator-webhook-secret"));
  }
  SECTION("the CRD's caBundle is this release's only when it installs the CRD, or says so (patchCaBundle)") {
    auto crd_args = [&](const std::string& values) {
      std::set<std::string> found;
      for (const auto& arg : deployment_args(yaml_documents(helm_template("-n my-operator-system " + values)),
                                             "my-operator-webhook"))
        if (arg.rfind("--webhook-crds", 0) == 0 || arg.rfind("--webhook-cert-names", 0) == 0)
          found.insert(arg);
      return found;
    };
    auto crd_role = [&](const std::string& values) {
      return find_object(yaml_documents(helm_template("-n my-operator-system " + values)), "ClusterRole",
                         "my-operator-webhook")
          .has_value();
    };
    const std::set<std::string> owned{"--webhook-crds=myresources.myorg.io"};
    const std::set<std::string> none{"--webhook-crds="};
    CHECK(crd_args("") == owned);
    CHECK(crd_role(""));
    // Another release installs the CRD (per-team releases): this one leaves its caBundle alone and may
    // not patch it; the Secrets are still its own.
    CHECK(crd_args("--set crds.install=false") == none);
    CHECK_FALSE(crd_role("--set crds.install=false"));
    CHECK(find_object(yaml_documents(helm_template("-n my-operator-system --set crds.install=false")), "Role",
                      "my-operator-webhook-secret"));
    // The CRD installed elsewhere names this release's Service.
    CHECK(crd_args("--set crds.install=false --set webhook.patchCaBundle=true") == owned);
    CHECK(crd_role("--set crds.install=false --set webhook.patchCaBundle=true"));
    CHECK(crd_args("--set webhook.patchCaBundle=false") == none);
    CHECK_FALSE(crd_role("--set webhook.patchCaBundle=false"));
    // A webhook.url is another webhook's, unless this release says it is its own: then the certificate
    // names its host.
    CHECK(crd_args("--set webhook.url=https://webhook.example:9443/convert") == none);
    CHECK(
        crd_args("--set webhook.url=https://Webhook.Example:9443/convert --set webhook.patchCaBundle=true") ==
        std::set<std::string>{"--webhook-crds=myresources.myorg.io", "--webhook-cert-names=webhook.example"});
    CHECK(crd_args("--set webhook.caBundle=Zm9v") == none);
    for (const std::string& contradiction :
         {std::string("--set webhook.patchCaBundle=true --set webhook.caBundle=Zm9v"),
          std::string("--set webhook.patchCaBundle=true --set webhook.certManager.enabled=true")}) {
      const auto refused = testenv::run(helm_binary() + " template t " + shell_quote(chart_folder()) +
                                        " --kube-version " + server_version() + " " + contradiction);
      INFO(contradiction << ": " << refused.output);
      CHECK_FALSE(refused.ok());
      CHECK(refused.output.find("webhook.patchCaBundle=true") != std::string::npos);
    }
  }
  SECTION("webhook.enabled=false without webhook.url is refused: v1alpha1 needs a webhook") {
    const auto refused = testenv::run(helm_binary() + " template t " + shell_quote(chart_folder()) +
                                      " --set webhook.enabled=false");
    INFO(refused.output);
    CHECK_FALSE(refused.ok());
    CHECK(refused.output.find("needs webhook.url") != std::string::npos);
  }
  SECTION("an issuerRef without a name is refused") {
    const auto refused = testenv::run(helm_binary() + " lint --strict " + shell_quote(chart_folder()) +
                                      " --set webhook.certManager.issuerRef.kind=ClusterIssuer");
    INFO(refused.output);
    CHECK_FALSE(refused.ok());
  }
}

TEST_CASE("packaging: the rendered CRD is config/crd's, marked keep", "[packaging][helm]") {
  const auto objects = yaml_documents(helm_template("-n my-operator-system --show-only templates/crds.yaml"));
  const auto crds = objects_of_kind(objects, "CustomResourceDefinition");
  REQUIRE(crds.size() == 1);
  const YAML::Node source = YAML::LoadFile(testenv::source_dir() + "/config/crd/myorg.io_myresources.yaml");
  CHECK(same_yaml(crds[0]["spec"], source["spec"]));
  CHECK(same_yaml(crds[0]["metadata"]["labels"], source["metadata"]["labels"]));
  CHECK(crds[0]["metadata"]["annotations"]["helm.sh/resource-policy"].as<std::string>("") == "keep");

  // The conversion webhook is the release's Service, or webhook.url with webhook.caBundle.
  const auto elsewhere =
      yaml_documents(helm_template("-n team-ops --show-only templates/crds.yaml --set fullnameOverride=ops"));
  const YAML::Node service = objects_of_kind(
      elsewhere, "CustomResourceDefinition")[0]["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
  CHECK(service["namespace"].as<std::string>("") == "team-ops");
  CHECK(service["name"].as<std::string>("") == "ops-webhook");
  CHECK(service["path"].as<std::string>("") == "/convert");
  CHECK(service["port"].as<int>(0) == 443);
  const auto by_url =
      yaml_documents(helm_template("-n my-operator-system --show-only templates/crds.yaml --set "
                                   "webhook.url=https://127.0.0.1:9443/convert --set webhook.caBundle=Q0EK"));
  const YAML::Node client_config =
      objects_of_kind(by_url, "CustomResourceDefinition")[0]["spec"]["conversion"]["webhook"]["clientConfig"];
  CHECK(client_config["url"].as<std::string>("") == "https://127.0.0.1:9443/convert");
  CHECK(client_config["caBundle"].as<std::string>("") == "Q0EK");
  CHECK_FALSE(client_config["service"]);
  const auto refused = testenv::run(helm_binary() + " template t " + shell_quote(chart_folder()) +
                                    " --set webhook.url=http://insecure.example/convert");
  INFO(refused.output);
  CHECK_FALSE(refused.ok());

  const auto not_kept = yaml_documents(
      helm_template("-n my-operator-system --show-only templates/crds.yaml --set crds.keep=false"));
  CHECK_FALSE(objects_of_kind(
      not_kept, "CustomResourceDefinition")[0]["metadata"]["annotations"]["helm.sh/resource-policy"]);
}

TEST_CASE("packaging: no selector of the chart relies on app.kubernetes.io/instance", "[packaging][helm]") {
  const auto objects =
      yaml_documents(helm_template("-n my-operator-system --set metrics.serviceMonitor.enabled=true --set "
                                   "metrics.certSecret=metrics-tls"));
  int selectors = 0;
  for (const auto& object : objects) {
    const YAML::Node spec = object["spec"];
    if (!spec || !spec.IsMap() || !spec["selector"] || !spec["selector"].IsMap()) continue;
    const YAML::Node selector = spec["selector"];
    const YAML::Node labels = selector["matchLabels"] ? selector["matchLabels"] : selector;
    ++selectors;
    INFO(object_name(object));
    CHECK_FALSE(labels["app.kubernetes.io/instance"]);
    CHECK(labels["myorg.io/release"].as<std::string>("") == "my-operator");
  }
  CHECK(selectors >= 4);  // Deployment, Service, PodDisruptionBudget, ServiceMonitor
}

TEST_CASE(
    "packaging: sharding.enabled renders every replica sharded, its Lease rights and a drain-friendly PDB",
    "[packaging][helm]") {
  const auto objects =
      yaml_documents(helm_template("-n my-operator-system --set sharding.enabled=true --set replicaCount=4"));
  const auto deployment = find_object(objects, "Deployment", "my-operator");
  REQUIRE(deployment);
  CHECK((*deployment)["spec"]["replicas"].as<int>() == 4);
  const auto args = deployment_args(objects, "my-operator");
  CHECK(args.count("--sharding") == 1);
  CHECK(args.count("--shard-group=my-operator") == 1);
  CHECK(args.count("--leader-elect") == 0);  // sharding replaces it
  const auto role = find_object(objects, "Role", "my-operator-leader-election");
  REQUIRE(role);
  bool lease_rights = false;
  for (const auto& rule : (*role)["rules"]) {
    if (rule["resources"][0].as<std::string>() != "leases") continue;
    std::set<std::string> verbs;
    for (const auto& verb : rule["verbs"]) verbs.insert(verb.as<std::string>());
    lease_rights = verbs == std::set<std::string>{"get", "list", "watch", "create", "update", "delete"};
  }
  CHECK(lease_rights);
  const auto budget = find_object(objects, "PodDisruptionBudget", "my-operator");
  REQUIRE(budget);
  CHECK((*budget)["spec"]["maxUnavailable"].as<int>() == 1);
  CHECK_FALSE((*budget)["spec"]["minAvailable"]);

  const auto with_namespaces =
      testenv::run(helm_binary() + " template " + shell_quote(chart_folder()) + " --kube-version " +
                   server_version() + " --set sharding.enabled=true --set 'watchNamespaces={team-a}'");
  INFO(with_namespaces.output);
  CHECK_FALSE(with_namespaces.ok());
  CHECK(with_namespaces.output.find("sharding.enabled needs watchNamespaces empty") != std::string::npos);
}

TEST_CASE(
    "packaging: fleet.kubeconfigSecrets.enabled renders --fleet-kubeconfig-secrets and list+watch of the "
    "release namespace's Secrets, none of it by default, and works beside sharding",
    "[packaging][helm][rbac][fleet]") {
  // Every (group/resource:verb) on Secrets that a Role or ClusterRole of the render grants, by its name.
  auto secret_grants = [](const std::vector<YAML::Node>& objects) {
    std::map<std::string, std::set<std::string>> grants;
    for (const auto& role : objects) {
      const std::string kind = role["kind"].as<std::string>("");
      if (kind != "Role" && kind != "ClusterRole") continue;
      for (const auto& grant : all_grants(role))
        if (grant.rfind("/secrets", 0) == 0)
          grants[kind + "/" + role["metadata"]["name"].as<std::string>()].insert(grant);
    }
    return grants;
  };
  const std::map<std::string, std::set<std::string>> webhook_secret_only = {
      {"Role/my-operator-webhook-secret", expected_webhook_secret_grants("my-operator-webhook-cert")}};

  SECTION("enabled: the flag on the manager, and list+watch of Secrets in the release namespace only") {
    const auto objects =
        yaml_documents(helm_template("-n my-operator-system --set fleet.kubeconfigSecrets.enabled=true"));
    CHECK(rbac_violations(objects).empty());
    const auto args = deployment_args(objects, "my-operator");
    CHECK(args.count("--fleet-kubeconfig-secrets") == 1);
    CHECK(args.count("--leader-elect") == 1);  // a fleet works under one leader
    // The webhook-only process runs no controller and refuses the flag.
    CHECK(deployment_args(objects, "my-operator-webhook").count("--fleet-kubeconfig-secrets") == 0);
    const auto role = find_object(objects, "Role", "my-operator-fleet-kubeconfigs");
    REQUIRE(role);
    CHECK((*role)["metadata"]["namespace"].as<std::string>() == "my-operator-system");
    CHECK(all_grants(*role) == std::set<std::string>{"/secrets:list", "/secrets:watch"});
    const auto binding = find_object(objects, "RoleBinding", "my-operator-fleet-kubeconfigs");
    REQUIRE(binding);
    CHECK((*binding)["metadata"]["namespace"].as<std::string>() == "my-operator-system");
    CHECK((*binding)["roleRef"]["kind"].as<std::string>() == "Role");
    CHECK((*binding)["roleRef"]["name"].as<std::string>() == "my-operator-fleet-kubeconfigs");
    REQUIRE((*binding)["subjects"].size() == 1);
    CHECK((*binding)["subjects"][0]["kind"].as<std::string>() == "ServiceAccount");
    CHECK((*binding)["subjects"][0]["name"].as<std::string>() == "my-operator");
    CHECK((*binding)["subjects"][0]["namespace"].as<std::string>() == "my-operator-system");
    // Nothing else changes: no Secret right anywhere else, no write to a Secret but the webhook's own.
    auto expected = webhook_secret_only;
    expected["Role/my-operator-fleet-kubeconfigs"] = {"/secrets:list", "/secrets:watch"};
    CHECK(secret_grants(objects) == expected);
    const auto manager = find_object(objects, "ClusterRole", "my-operator-manager");
    REQUIRE(manager);
    CHECK(granted(*manager) == expected_manager_grants());
  }
  SECTION("by default: no flag and no right on Secrets but the webhook's own") {
    const auto objects = yaml_documents(helm_template("-n my-operator-system"));
    for (const char* deployment : {"my-operator", "my-operator-webhook"}) {
      INFO(deployment);
      CHECK(deployment_args(objects, deployment).count("--fleet-kubeconfig-secrets") == 0);
    }
    CHECK_FALSE(find_object(objects, "Role", "my-operator-fleet-kubeconfigs"));
    CHECK_FALSE(find_object(objects, "RoleBinding", "my-operator-fleet-kubeconfigs"));
    CHECK(secret_grants(objects) == webhook_secret_only);
  }
  SECTION("with sharding.enabled: the members are shared among the replicas, the flag beside --sharding") {
    const auto objects = yaml_documents(helm_template(
        "-n my-operator-system --set fleet.kubeconfigSecrets.enabled=true --set sharding.enabled=true"));
    const auto args = deployment_args(objects, "my-operator");
    CHECK(args.count("--fleet-kubeconfig-secrets") == 1);
    CHECK(args.count("--sharding") == 1);
    CHECK(find_object(objects, "Role", "my-operator-fleet-kubeconfigs"));
  }
}

TEST_CASE(
    "packaging: fleet.clusterProfiles renders the provider file, its flags, its mounts and list+watch of the "
    "profiles in their namespace, refuses no providers, and renders none of it by default",
    "[packaging][helm][rbac][fleet]") {
  const std::string providers =
      R"([{"name":"secretreader","execConfig":{"apiVersion":"client.authentication.k8s.io/v1",)"
      R"("command":"/plugins/secretreader-plugin","args":["--mode","token"],"provideClusterInfo":true}}])";
  const auto manager_pod = [](const std::vector<YAML::Node>& objects) {
    const auto deployment = find_object(objects, "Deployment", "my-operator");
    REQUIRE(deployment);
    return (*deployment)["spec"]["template"];
  };
  const auto no_profile_flag = [](const std::set<std::string>& args) {
    return std::ranges::none_of(args, [](const std::string& arg) {
      return arg.find("--fleet-cluster-profile") != std::string::npos;
    });
  };
  const auto rendered = [&](const std::string& namespace_flag) {
    return yaml_documents(helm_template(
        "-n my-operator-system --set fleet.clusterProfiles.enabled=true " + namespace_flag + " --set-json " +
        shell_quote("fleet.clusterProfiles.providers=" + providers) + " --set-json " +
        shell_quote(R"(fleet.clusterProfiles.pluginVolumes=[{"name":"plugins","emptyDir":{}}])") +
        " --set-json " +
        shell_quote(
            R"(fleet.clusterProfiles.pluginVolumeMounts=[{"name":"plugins","mountPath":"/plugins"}])")));
  };

  SECTION(
      "enabled: the file from the values, mounted where the flag says, the rights in the profiles' "
      "namespace") {
    const auto objects = rendered("--set fleet.clusterProfiles.namespace=fleet-system");
    CHECK(rbac_violations(objects).empty());
    const YAML::Node pod = manager_pod(objects);
    const auto args = deployment_args(objects, "my-operator");
    CHECK(args.count("--fleet-cluster-profile-providers=/etc/my-operator/fleet/providers.json") == 1);
    CHECK(args.count("--fleet-cluster-profile-namespace=fleet-system") == 1);
    const auto config_map = find_object(objects, "ConfigMap", "my-operator-fleet-providers");
    REQUIRE(config_map);
    // The file is the values' list under "providers", as the operator reads it.
    const YAML::Node file = YAML::Load((*config_map)["data"]["providers.json"].as<std::string>());
    CHECK(same_yaml(file["providers"], YAML::Load(providers)));
    std::map<std::string, std::string> mounts;
    for (const auto& mount : pod["spec"]["containers"][0]["volumeMounts"])
      mounts[mount["name"].as<std::string>()] = mount["mountPath"].as<std::string>();
    CHECK(mounts["fleet-providers"] == "/etc/my-operator/fleet");
    CHECK(mounts["plugins"] == "/plugins");
    std::map<std::string, YAML::Node> volumes;
    for (const auto& volume : pod["spec"]["volumes"])
      volumes[volume["name"].as<std::string>()] = static_cast<const YAML::Node&>(volume);
    CHECK(volumes["fleet-providers"]["configMap"]["name"].as<std::string>("") ==
          "my-operator-fleet-providers");
    CHECK(volumes.count("plugins") == 1);
    // The file is read at start: its checksum on the pod rolls the pods when it changes.
    CHECK_FALSE(pod["metadata"]["annotations"]["checksum/fleet-providers"].as<std::string>("").empty());
    const auto role = find_object(objects, "Role", "my-operator-fleet-cluster-profiles");
    REQUIRE(role);
    CHECK((*role)["metadata"]["namespace"].as<std::string>() == "fleet-system");
    CHECK(all_grants(*role) == std::set<std::string>{"multicluster.x-k8s.io/clusterprofiles:list",
                                                     "multicluster.x-k8s.io/clusterprofiles:watch",
                                                     "events.k8s.io/events:create",
                                                     "events.k8s.io/events:patch"});
    const auto binding = find_object(objects, "RoleBinding", "my-operator-fleet-cluster-profiles");
    REQUIRE(binding);
    CHECK((*binding)["metadata"]["namespace"].as<std::string>() == "fleet-system");
    CHECK((*binding)["subjects"][0]["name"].as<std::string>() == "my-operator");
    CHECK((*binding)["subjects"][0]["namespace"].as<std::string>() == "my-operator-system");
    // The webhook-only process runs no controller.
    CHECK(no_profile_flag(deployment_args(objects, "my-operator-webhook")));
  }
  SECTION("without a namespace: the release's, and no namespace flag") {
    const auto objects = rendered("");
    CHECK(deployment_args(objects, "my-operator").count("--fleet-cluster-profile-namespace=fleet-system") ==
          0);
    const auto role = find_object(objects, "Role", "my-operator-fleet-cluster-profiles");
    REQUIRE(role);
    CHECK((*role)["metadata"]["namespace"].as<std::string>() == "my-operator-system");
  }
  SECTION("enabled without providers: helm refuses, naming the value") {
    const auto result =
        helm("template my-operator " + shell_quote(testenv::source_dir() + "/charts/my-operator") +
             " --kube-version " + server_version() + " --set fleet.clusterProfiles.enabled=true");
    CHECK_FALSE(result.ok());
    CHECK(result.output.find("fleet.clusterProfiles.providers") != std::string::npos);
  }
  SECTION("by default: none of it") {
    const auto objects = yaml_documents(helm_template("-n my-operator-system"));
    CHECK(no_profile_flag(deployment_args(objects, "my-operator")));
    CHECK_FALSE(find_object(objects, "ConfigMap", "my-operator-fleet-providers"));
    CHECK_FALSE(find_object(objects, "Role", "my-operator-fleet-cluster-profiles"));
  }
}

TEST_CASE(
    "packaging: config/fleet/member-rbac.yaml grants a member's operator identity the chart's manager rules, "
    "and the API server accepts it",
    "[packaging][helm][rbac][fleet]") {
  const std::string text = read_text(testenv::source_dir() + "/config/fleet/member-rbac.yaml");
  const auto objects = yaml_documents(text);
  CHECK(objects.size() == 2);
  const auto violations = rbac_violations(objects);
  for (const auto& violation : violations) UNSCOPED_INFO(violation);
  CHECK(violations.empty());
  const auto role = find_object(objects, "ClusterRole", "my-operator-fleet-member");
  REQUIRE(role);
  // In a member the operator does what it does in the hub: the same rules, verb for verb.
  CHECK(all_grants(*role) == expected_manager_grants());
  const auto hub = find_object(yaml_documents(helm_template("-n my-operator-system")), "ClusterRole",
                               "my-operator-manager");
  REQUIRE(hub);
  CHECK(same_yaml((*role)["rules"], (*hub)["rules"]));
  const auto binding = find_object(objects, "ClusterRoleBinding", "my-operator-fleet-member");
  REQUIRE(binding);
  CHECK((*binding)["roleRef"]["kind"].as<std::string>() == "ClusterRole");
  CHECK((*binding)["roleRef"]["name"].as<std::string>() == "my-operator-fleet-member");
  REQUIRE((*binding)["subjects"].size() == 1);
  CHECK((*binding)["subjects"][0]["kind"].as<std::string>() == "User");
  CHECK((*binding)["subjects"][0]["name"].as<std::string>() == "my-operator-fleet");
  const auto result = server_dry_run(text);
  INFO(result.output);
  CHECK(result.ok());
}

TEST_CASE(
    "packaging: config/ carries the chart's webhook Deployment container and ServiceAccount policy (release "
    "my-operator)",
    "[packaging][helm][webhook][policy]") {
  const auto objects = yaml_documents(helm_template("-n my-operator-system"));
  const auto config_text = [](const std::string& file) {
    return yaml_documents(read_text(testenv::source_dir() + "/config/" + file));
  };
  // The container, but for the image (kustomize's `images:` sets it).
  const auto chart_webhook = find_object(objects, "Deployment", "my-operator-webhook");
  REQUIRE(chart_webhook);
  const auto config_webhook =
      find_object(config_text("manager/webhook_deployment.yaml"), "Deployment", "my-operator-webhook");
  REQUIRE(config_webhook);
  YAML::Node chart_container = YAML::Clone((*chart_webhook)["spec"]["template"]["spec"]["containers"][0]);
  YAML::Node config_container = YAML::Clone((*config_webhook)["spec"]["template"]["spec"]["containers"][0]);
  chart_container.remove("image");
  config_container.remove("image");
  CHECK(same_yaml(chart_container, config_container));
  for (const char* field : {"priorityClassName", "securityContext", "terminationGracePeriodSeconds",
                            "serviceAccountName", "automountServiceAccountToken"}) {
    INFO(field);
    CHECK(same_yaml((*chart_webhook)["spec"]["template"]["spec"][field],
                    (*config_webhook)["spec"]["template"]["spec"][field]));
  }
  // The ServiceAccount policies, spec for spec.
  const auto config_policies = config_text("rbac/service_account_policy.yaml");
  int compared = 0;
  for (const auto& object : objects) {
    const std::string kind = object["kind"].as<std::string>();
    const std::string name = object["metadata"]["name"].as<std::string>();
    if (name.find("-service-account-") == std::string::npos) continue;
    INFO(kind << "/" << name);
    const auto copy = find_object(config_policies, kind, name);
    REQUIRE(copy);
    CHECK(same_yaml(object["spec"], (*copy)["spec"]));
    ++compared;
  }
  CHECK(compared == 4);
  CHECK(config_policies.size() == 4);
}
