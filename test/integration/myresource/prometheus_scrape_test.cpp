// A real Prometheus scrapes the built operator on the real control plane, configured as the chart's
// ServiceMonitor describes it (with metrics.certSecret): HTTPS, the bearer token from the token Secret
// of the chart's scraper ServiceAccount (bound to metrics-reader only, applied as the chart renders
// it), the certificate verified with the CA of the certificate
// Secret for the Service's DNS name, the job named after the metrics Service. Then every PromQL
// expression of the shipped Grafana dashboard, with its variables filled in as Grafana fills them,
// must draw something after a small workload (create, update, a refused create, delete); a panel
// that shows nothing is a defect of the dashboard or the operator. The shipped alerts are loaded
// too and must evaluate without error.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>
#include <vector>

#include "myresource/operator_process.h"
#include "myresource/prometheus_process.h"
#include "packaging/packaging_support.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// Prometheus scrapes every second (the ServiceMonitor's 30 s would make a slow test); Grafana's
// data source is told so, which is what its $__interval and $__rate_interval follow.
constexpr int kScrapeIntervalSeconds = 1;

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text.substr(text.find_last_of('\n') + 1);
}

// The chart's ServiceMonitor endpoint, the Service it selects and the scraper identity rendered next to
// it, as `helm template` renders them into a namespace with a certificate Secret.
struct ShippedMonitor {
  YAML::Node endpoint;
  std::string service_name;         // the job label prometheus-operator gives the targets
  std::string namespace_;           // of the Service
  std::vector<YAML::Node> scraper;  // ServiceAccount, its token Secret, ClusterRoleBinding
};

ShippedMonitor chart_monitor(const std::string& namespace_) {
  const auto objects =
      packaging::yaml_documents(packaging::helm_template("-n " + namespace_ +
                                                         " --set metrics.serviceMonitor.enabled=true --set "
                                                         "metrics.certSecret=metrics-tls"));
  ShippedMonitor shipped;
  for (const auto& object : objects)
    if (object["metadata"]["name"].as<std::string>("").ends_with("-metrics-scraper") ||
        object["metadata"]["name"].as<std::string>("").ends_with("-metrics-scraper-token"))
      shipped.scraper.push_back(object);
  YAML::Node selector;
  for (const auto& object : objects)
    if (object["kind"].as<std::string>("") == "ServiceMonitor") {
      REQUIRE(object["spec"]["endpoints"].size() == 1);
      shipped.endpoint = object["spec"]["endpoints"][0];
      selector = object["spec"]["selector"]["matchLabels"];
      shipped.namespace_ = object["spec"]["namespaceSelector"]["matchNames"][0].as<std::string>();
    }
  REQUIRE(shipped.endpoint);
  for (const auto& object : objects) {
    if (object["kind"].as<std::string>("") != "Service") continue;
    bool selected = true;
    for (const auto& label : selector)
      selected = selected && object["metadata"]["labels"][label.first.as<std::string>()].as<std::string>(
                                 "") == label.second.as<std::string>();
    bool has_port = false;
    for (const auto& port : object["spec"]["ports"])
      has_port = has_port || port["name"].as<std::string>("") == shipped.endpoint["port"].as<std::string>();
    if (selected && has_port) shipped.service_name = object["metadata"]["name"].as<std::string>();
  }
  REQUIRE_FALSE(shipped.service_name.empty());
  return shipped;
}

// A CA and a serving certificate it signed for `dns_name`, as cert-manager puts them into the
// metrics certificate Secret: <folder>/ca.crt, tls.crt, tls.key.
void make_certificate_secret_files(const std::filesystem::path& folder, const std::string& dns_name) {
  std::filesystem::create_directories(folder);
  const std::string at = packaging::shell_quote(folder.string()) + "/";
  {
    std::ofstream extensions(folder / "san.ext");
    extensions << "subjectAltName=DNS:" << dns_name << "\nextendedKeyUsage=serverAuth\n";
  }
  for (const std::string& command :
       {"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "
        "/CN=myop-prometheus-ca"
        " -keyout " +
            at + "ca.key -out " + at + "ca.crt",
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + dns_name + " -keyout " +
            at + "tls.key -out " + at + "tls.csr",
        "openssl x509 -req -days 1 -in " + at + "tls.csr -CA " + at + "ca.crt -CAkey " + at +
            "ca.key -CAcreateserial -extfile " + at + "san.ext -out " + at + "tls.crt"}) {
    const auto result = testenv::run(command);
    if (!result.ok()) FAIL(command << ": " << result.output);
  }
}

// The scrape configuration prometheus-operator generates from the endpoint, for one target: the
// operator on 127.0.0.1. `token_file` holds the scraper's token, `ca_file` the Secret's ca.crt.
// Fails on what the test cannot mirror, and on insecureSkipVerify: the ServiceMonitor must verify.
std::string scrape_config(const ShippedMonitor& monitor, unsigned short port,
                          const std::string& target_namespace, const std::string& token_file,
                          const std::string& ca_file) {
  const YAML::Node& endpoint = monitor.endpoint;
  REQUIRE(endpoint["scheme"].as<std::string>("") == "https");
  const YAML::Node tls = endpoint["tlsConfig"];
  REQUIRE(tls);
  REQUIRE_FALSE(tls["insecureSkipVerify"].as<bool>(false));
  REQUIRE(tls["ca"]);
  REQUIRE(tls["ca"]["secret"]);
  REQUIRE(tls["ca"]["secret"]["key"].as<std::string>("") == "ca.crt");
  const std::string server_name = tls["serverName"].as<std::string>("");
  REQUIRE_FALSE(server_name.empty());
  // The token: a Secret's (authorization.credentials, bearerTokenSecret) or Prometheus's own
  // ServiceAccount token file (bearerTokenFile); either way one of a metrics reader.
  const bool token = (endpoint["authorization"] && endpoint["authorization"]["credentials"]) ||
                     endpoint["bearerTokenSecret"] || endpoint["bearerTokenFile"];
  REQUIRE(token);
  if (endpoint["authorization"])
    REQUIRE(endpoint["authorization"]["type"].as<std::string>("Bearer") == "Bearer");

  std::string config;
  config += "global:\n";
  config += "  scrape_interval: " + std::to_string(kScrapeIntervalSeconds) + "s\n";
  config += "  scrape_timeout: " + std::to_string(kScrapeIntervalSeconds) + "s\n";
  config += "  evaluation_interval: " + std::to_string(kScrapeIntervalSeconds) + "s\n";
  config += "rule_files: [rules.yaml]\n";
  config += "scrape_configs:\n";
  config += "  - job_name: " + monitor.service_name + "\n";
  config += "    scheme: https\n";
  config += "    metrics_path: " + endpoint["path"].as<std::string>("/metrics") + "\n";
  config += "    authorization:\n";
  config += "      type: Bearer\n";
  config += "      credentials_file: " + token_file + "\n";
  config += "    tls_config:\n";
  config += "      ca_file: " + ca_file + "\n";
  config += "      server_name: " + server_name + "\n";
  config += "      insecure_skip_verify: false\n";
  config += "    static_configs:\n";
  config += "      - targets: ['127.0.0.1:" + std::to_string(port) + "']\n";
  // The target labels prometheus-operator's relabelling gives an endpoint of the Service.
  config += "        labels:\n";
  config += "          namespace: " + target_namespace + "\n";
  config += "          service: " + monitor.service_name + "\n";
  config += "          endpoint: " + endpoint["port"].as<std::string>() + "\n";
  config += "          pod: my-operator-0\n";
  config += "          container: manager\n";
  return config;
}

// Every `expr` of the dashboard's panels (rows' panels included), with its panel's title.
std::vector<std::pair<std::string, std::string>> dashboard_expressions() {
  const std::string text =
      packaging::read_text(testenv::source_dir() + "/config/grafana/my-operator-dashboard.json");
  rapidjson::Document dashboard;
  REQUIRE_FALSE(dashboard.Parse(text.c_str()).HasParseError());
  std::vector<std::pair<std::string, std::string>> expressions;
  std::function<void(const rapidjson::Value&)> walk = [&](const rapidjson::Value& panels) {
    for (const auto& panel : panels.GetArray()) {
      if (panel.HasMember("panels")) walk(panel["panels"]);
      if (!panel.HasMember("targets")) continue;
      for (const auto& target : panel["targets"].GetArray())
        if (target.HasMember("expr"))
          expressions.emplace_back(panel["title"].GetString(), target["expr"].GetString());
    }
  };
  walk(dashboard["panels"]);
  return expressions;
}

// The dashboard's variables as Grafana replaces them for one namespace and one job, on a data source
// scraped every kScrapeIntervalSeconds, for a graph of `range_seconds` (one point per second).
std::string with_variables(std::string expr, const std::string& namespace_, const std::string& job,
                           int range_seconds) {
  const int interval = kScrapeIntervalSeconds;  // $__interval: never below the scrape interval
  // $__rate_interval = max($__interval + scrape interval, 4 * scrape interval)
  const int rate_interval = std::max(interval + kScrapeIntervalSeconds, 4 * kScrapeIntervalSeconds);
  const std::vector<std::pair<std::string, std::string>> variables = {
      {"__rate_interval", std::to_string(rate_interval) + "s"},
      {"__interval", std::to_string(interval) + "s"},
      {"__range", std::to_string(range_seconds) + "s"},
      {"namespace", namespace_},
      {"job", job},
  };
  for (const auto& [name, value] : variables)
    for (const std::string& form : {"${" + name + "}", "[[" + name + "]]", "$" + name})
      for (auto at = expr.find(form); at != std::string::npos; at = expr.find(form, at + value.size()))
        expr.replace(at, form.size(), value);
  return expr;
}

// A ValidatingAdmissionPolicy that refuses every Deployment created in one namespace, so the
// operator's reconciles there fail until lift(); removed when the guard goes away.
class RefusedDeployments {
 public:
  explicit RefusedDeployments(const std::string& namespace_) : name_("myop-test-" + namespace_ + "-refuse") {
    const std::string manifest =
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingAdmissionPolicy\n"
        "metadata: {name: " +
        name_ +
        "}\n"
        "spec:\n"
        "  failurePolicy: Fail\n"
        "  matchConstraints:\n"
        "    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: "
        "[deployments]}]\n"
        "  validations: [{expression: 'false', message: refused by the prometheus scrape test}]\n"
        "---\n"
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingAdmissionPolicyBinding\n"
        "metadata: {name: " +
        name_ +
        "}\n"
        "spec:\n"
        "  policyName: " +
        name_ +
        "\n"
        "  validationActions: [Deny]\n"
        "  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: " +
        namespace_ + "}}}\n";
    const auto applied = testenv::kubectl_apply(manifest);
    if (!applied.ok()) FAIL("cannot apply the refusing policy: " << applied.output);
    // The API server loads policies a moment after they are created: wait until one refuses.
    const std::string probe =
        "create deployment probe --image=nginx:1.27.1 --dry-run=server -n " + namespace_;
    if (!eventually([&] { return !testenv::kubectl(probe).ok(); }, 30s))
      FAIL("the refusing policy did not take effect within 30 s");
  }
  ~RefusedDeployments() { lift(); }
  RefusedDeployments(const RefusedDeployments&) = delete;
  RefusedDeployments& operator=(const RefusedDeployments&) = delete;

  void lift() const {
    testenv::kubectl("delete validatingadmissionpolicybinding " + name_ + " --ignore-not-found");
    testenv::kubectl("delete validatingadmissionpolicy " + name_ + " --ignore-not-found");
  }

 private:
  std::string name_;
};

std::string describe(const QueryResult& result) {
  if (!result.error.empty()) return "error: " + result.error;
  std::string text;
  for (const auto& series : result.series) {
    text += "  " + series.labels + ":";
    for (std::size_t i = series.values.size() > 5 ? series.values.size() - 5 : 0; i < series.values.size();
         ++i)
      text += " " + std::to_string(series.values[i]);
    text += "\n";
  }
  return text.empty() ? "  (no series)\n" : text;
}

}  // namespace

TEST_CASE(
    "prometheus: a real Prometheus scrapes --metrics-secure as the ServiceMonitor says (token and verified "
    "CA) "
    "and every expression of the Grafana dashboard has data",
    "[myresource][operator][metrics][prometheus]") {
  const auto started = std::chrono::steady_clock::now();
  testenv::ScopedNamespace ns("prom-scrape");
  testenv::ScopedNamespace refused_ns("prom-refused");
  const ShippedMonitor monitor = chart_monitor(ns.name());
  const std::string server_name = monitor.endpoint["tlsConfig"]["serverName"].as<std::string>("");
  INFO("ServiceMonitor endpoint:\n" << packaging::trimmed(YAML::Dump(monitor.endpoint)));

  PrometheusProcess prometheus;
  const std::filesystem::path secret = prometheus.folder() / "metrics-tls";
  make_certificate_secret_files(secret, server_name);
  const std::filesystem::path served = prometheus.folder() / "served";  // --metrics-cert-dir
  std::filesystem::create_directories(served);
  std::filesystem::copy_file(secret / "tls.crt", served / "tls.crt");
  std::filesystem::copy_file(secret / "tls.key", served / "tls.key");

  // Prometheus's side, as the chart renders it: the scraper ServiceAccount and its token Secret, and
  // the binding to the metrics reader (under a test name, onto config/rbac's role: a Helm release on
  // the same control plane owns the real names). prometheus-operator would hand the Secret's key to
  // Prometheus; here it goes into a file.
  const YAML::Node credentials = monitor.endpoint["authorization"]["credentials"];
  REQUIRE(credentials);
  const std::string token_secret = credentials["name"].as<std::string>();
  const std::string token_key = credentials["key"].as<std::string>();
  const std::string reader_role = apply_test_cluster_role("metrics_reader_role.yaml");
  const std::string binding = "myop-test-" + ns.name() + "-metrics-scraper";
  struct BindingGuard {
    std::string name;
    ~BindingGuard() { testenv::kubectl("delete clusterrolebinding " + name + " --ignore-not-found"); }
  } binding_guard{binding};
  REQUIRE(monitor.scraper.size() == 3);
  for (YAML::Node object : monitor.scraper) {
    object = YAML::Clone(object);
    if (object["kind"].as<std::string>() == "ClusterRoleBinding") {
      REQUIRE(object["roleRef"]["name"].as<std::string>().ends_with("-metrics-reader"));
      object["metadata"]["name"] = binding;
      object["roleRef"]["name"] = reader_role;
    }
    YAML::Emitter emitter;
    emitter << object;
    const auto applied = testenv::kubectl_apply(std::string(emitter.c_str()) + "\n");
    INFO(emitter.c_str());
    REQUIRE(applied.ok());
  }
  const std::string token_command =
      "get secret " + token_secret + " -n " + ns.name() + " -o jsonpath='{.data." + token_key + "}'";
  REQUIRE(eventually([&] { return !last_line(testenv::kubectl(token_command).output).empty(); }, 30s));
  const std::string token_file = (prometheus.folder() / "token").string();
  const auto decoded =
      testenv::run("printf %s " + packaging::shell_quote(last_line(testenv::kubectl(token_command).output)) +
                   " | base64 -d > " + packaging::shell_quote(token_file));
  REQUIRE(decoded.ok());

  // The conversion webhook with its self-managed certificates too (the dashboard's certificate panels),
  // leaving the CRD, which names the fixture's webhook, alone.
  OperatorProcess operator_process(
      {.user = "myop-prometheus-scrape",
       .namespaces = {ns.name(), refused_ns.name()},
       .pod_namespace = ns.name(),
       .extra_args = {"--metrics-secure", "--metrics-cert-dir", served.string(), "--leader-elect",
                      "--leader-election-namespace", ns.name(), "--webhook-bind-address",
                      "127.0.0.1:" + std::to_string(free_port()), "--webhook-crds="},
       .extra_cluster_role_files = {"metrics_auth_role.yaml"},
       .extra_role_files = {"webhook_secret_role.yaml"}});
  operator_process.start();

  // The shipped alerts, evaluated on the scraped series (their job is the chart's default one).
  {
    const YAML::Node rules = YAML::LoadFile(testenv::source_dir() + "/config/prometheus/rules.yaml")["spec"];
    YAML::Emitter emitter;
    emitter << rules;
    std::ofstream file(prometheus.folder() / "rules.yaml");
    file << emitter.c_str() << "\n";
  }
  const std::string job = monitor.service_name;
  prometheus.start(scrape_config(monitor, operator_process.metrics_port(), ns.name(), token_file,
                                 (secret / "ca.crt").string()));
  INFO("prometheus log:\n" << prometheus.log_tail());
  INFO("operator log:\n" << operator_process.log_tail(30));

  const double workload_start = unix_now();
  auto has_data = [&](const std::string& promql) {
    const QueryResult result = prometheus.query(promql);
    return result.error.empty() && !result.series.empty();
  };

  SECTION("the target is up over HTTPS with the token and the verified certificate") {
    const std::string up = "up{job=\"" + job + "\"} == 1";
    const bool scraped = eventually([&] { return has_data(up); }, 30s);
    INFO("targets: " << prometheus.get("/api/v1/targets"));
    REQUIRE(scraped);
    const std::string targets = prometheus.get("/api/v1/targets");
    CHECK(targets.find("\"health\":\"up\"") != std::string::npos);
    CHECK(targets.find("\"lastError\":\"\"") != std::string::npos);
    CHECK(targets.find("\"scrapeUrl\":\"https://127.0.0.1:" +
                       std::to_string(operator_process.metrics_port()) + "/metrics\"") != std::string::npos);
    // The same scrape with another CA fails: the certificate is verified, not skipped.
    make_certificate_secret_files(prometheus.folder() / "other-ca", server_name);
    const auto other_ca = testenv::run(
        "curl -s -o /dev/null -w '%{http_code}' --cacert " +
        packaging::shell_quote((prometheus.folder() / "other-ca/ca.crt").string()) + " --resolve " +
        server_name + ":" + std::to_string(operator_process.metrics_port()) + ":127.0.0.1 https://" +
        server_name + ":" + std::to_string(operator_process.metrics_port()) + "/metrics");
    CHECK(last_line(other_ca.output) == "000");

    testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1"));
    for (const std::string& series :
         {"controller_runtime_reconcile_total{job=\"" + job + "\"} > 0",
          "workqueue_depth{job=\"" + job + "\"}",
          "myoperator_event_to_reconcile_seconds_bucket{job=\"" + job + "\"} > 0"}) {
      INFO(series);
      CHECK(eventually([&] { return has_data(series); }, 60s));
    }
  }

  SECTION("every expression of the Grafana dashboard draws something after a small workload") {
    REQUIRE(eventually([&] { return has_data("up{job=\"" + job + "\"} == 1"); }, 30s));
    // Create, update a spec, a create the API server refuses (reconcile errors), delete.
    for (const std::string name : {"web", "api", "worker"})
      REQUIRE(testenv::kubectl_apply(myresource_manifest(ns.name(), name, "nginx:1.27.1")).ok());
    for (const std::string name : {"web", "api", "worker"})
      CHECK(eventually([&] { return myresource_ready(ns.name(), name); }, 120s));
    testenv::kubectl_or_fail("patch myresource web -n " + ns.name() +
                             " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\",\"replicas\":2}}'");
    CHECK(eventually(
        [&] { return jsonpath("myresource", ns.name(), "web", "{.status.image}") == "nginx:1.27.2"; }, 60s));
    const RefusedDeployments refusal(refused_ns.name());
    REQUIRE(testenv::kubectl_apply(myresource_manifest(refused_ns.name(), "refused", "nginx:1.27.1")).ok());
    CHECK(eventually(
        [&] { return has_data("controller_runtime_reconcile_errors_total{job=\"" + job + "\"} > 0"); }, 60s));
    testenv::kubectl_or_fail("delete myresource worker -n " + ns.name() + " --wait=false");
    CHECK(eventually([&] { return myresource_gone(ns.name(), "worker"); }, 60s));
    refusal.lift();
    CHECK(eventually([&] { return myresource_ready(refused_ns.name(), "refused"); }, 120s));
    // A few more scrapes, so the last rate windows hold the end of the workload.
    std::this_thread::sleep_for(std::chrono::seconds(5 * kScrapeIntervalSeconds));

    const double end = unix_now();
    const double start = workload_start - 5;
    const int range_seconds = static_cast<int>(end - start);
    const auto expressions = dashboard_expressions();
    REQUIRE(expressions.size() >= 20);
    int evaluated = 0;
    for (const auto& [title, expr] : expressions) {
      const std::string promql = with_variables(expr, ns.name(), job, range_seconds);
      INFO("panel \"" << title << "\": " << promql);
      CHECK(promql.find('$') == std::string::npos);  // a variable the test does not fill in
      const QueryResult result = prometheus.query_range(promql, start, end, kScrapeIntervalSeconds);
      INFO(describe(result));
      CHECK(result.error.empty());
      CHECK_FALSE(result.series.empty());
      bool drawn = false;
      for (const auto& series : result.series) drawn = drawn || series.has_finite_value();
      CHECK(drawn);
      ++evaluated;
    }
    std::printf("prometheus scrape test: %d dashboard expressions evaluated over %d s, all with data\n",
                evaluated, range_seconds);

    // The shipped alerts evaluate on these series without error, and none fires.
    const std::string rules = prometheus.get("/api/v1/rules");
    INFO("rules: " << rules);
    CHECK(std::regex_search(rules, std::regex("\"name\":\"MyOperatorNoLeader\"")));
    CHECK(rules.find("\"health\":\"err\"") == std::string::npos);
    CHECK(rules.find("\"health\":\"unknown\"") == std::string::npos);
    CHECK(rules.find("\"state\":\"firing\"") == std::string::npos);
    CHECK(operator_process.running());
  }
  std::printf("prometheus scrape test: %.0f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}
