// my-operator: flags -> wiring. Kept thin; every behaviour lives in a layer under src/.
#include <malloc.h>
#include <pplx/threadpool.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stop_token>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/request_metrics.h"
#include "kube/transport.h"
#include "myresource/operator.h"
#include "myresource/types.h"
#include "runtime/leader_election.h"
#include "runtime/logging.h"
#include "runtime/manager.h"
#include "runtime/metrics_authorizer.h"
#include "runtime/signal_watcher.h"
#include "version.h"

namespace {

struct Options {
  std::string kubeconfig;
  std::string context;
  std::string namespaces;
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  bool metrics_secure = false;
  std::string metrics_cert_dir;
  std::string metrics_cert_name = "tls.crt";
  std::string metrics_key_name = "tls.key";
  bool leader_elect = false;
  std::string leader_election_namespace;
  std::string leader_election_id = "my-operator.myorg.io";
  int max_concurrent_reconciles = 4;
  // No client-side rate limit by default: the API server's Priority and Fairness limits clients, and its
  // 429 + Retry-After is honoured (controller-runtime dropped its default limit for the same reason).
  double qps = 0;
  int burst = 100;
  std::string resync_period = "10h";
  std::string orphan_sweep_period = "5m";
  std::string config_map = "my-operator-config";
  std::string log_level = "info";
  std::string log_format = "json";
  bool allow_insecure_skip_tls_verify = false;
};

// Every flag is also read from MYOP_<FLAG_IN_UPPER_SNAKE_CASE>, as docs/design.md says.
std::string environment_name(const std::string& flag) {
  std::string name = "MYOP_";
  for (char c : flag)
    name += (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// "10h", "30m", "45s", "1h30m" -> seconds; throws CLI::ValidationError (naming `flag`) on anything
// else.
std::chrono::seconds parse_duration(const std::string& flag, const std::string& text) {
  std::chrono::seconds total{0};
  std::size_t position = 0;
  if (text.empty()) throw CLI::ValidationError(flag, "empty duration");
  while (position < text.size()) {
    std::size_t digits = position;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == position || digits == text.size())
      throw CLI::ValidationError(flag, "'" + text + "' is not a duration such as 10h, 30m or 1h30m");
    const long value = std::stol(text.substr(position, digits - position));
    switch (text[digits]) {
      case 'h':
        total += std::chrono::hours(value);
        break;
      case 'm':
        total += std::chrono::minutes(value);
        break;
      case 's':
        total += std::chrono::seconds(value);
        break;
      default:
        throw CLI::ValidationError(flag, "'" + text + "' has an unknown unit (use h, m or s)");
    }
    position = digits + 1;
  }
  return total;
}

std::vector<std::string> split_namespaces(const std::string& list) {
  std::vector<std::string> namespaces;
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty() && std::find(namespaces.begin(), namespaces.end(), item) == namespaces.end())
      namespaces.push_back(item);
  }
  return namespaces;
}

// The operator's own namespace: POD_NAMESPACE (downward API), else the kubeconfig context's or the
// in-cluster service account's namespace.
std::string operator_namespace(const myop::kube::ClientConfig& config) {
  if (const char* pod_namespace = std::getenv("POD_NAMESPACE"); pod_namespace && *pod_namespace)
    return pod_namespace;
  return config.namespace_name.empty() ? "default" : config.namespace_name;
}

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) return "my-operator";
  return buffer;
}

// Fails fast, with a message a person can act on, when the CRD is missing or RBAC forbids a read
// the operator cannot work without.
bool preflight(myop::kube::Client& client, const std::vector<std::string>& namespaces) {
  using myop::kube::Reason;
  auto discovered = client.discover(myop::myresource::kGroup, myop::myresource::kVersion);
  if (!discovered) {
    if (discovered.error().reason == Reason::NotFound) {
      spdlog::critical(
          "the MyResource CRD (myresources.myorg.io, version v1alpha1) is not installed; install it "
          "with `kubectl apply -f config/crd/` or the Helm chart, then start the operator again");
    } else {
      spdlog::critical("cannot reach the API server to discover myorg.io/v1alpha1: {}",
                       discovered.error().message);
    }
    return false;
  }
  const myop::kube::ResourceType myresources{
      std::string(myop::myresource::kGroup), std::string(myop::myresource::kVersion),
      std::string(myop::myresource::kPlural), true, std::string(myop::myresource::kKind)};
  myop::kube::ListOptions options;
  options.limit = 1;
  const std::vector<std::string> scopes = namespaces.empty() ? std::vector<std::string>{""} : namespaces;
  for (const std::string& scope : scopes) {
    const std::string where = scope.empty() ? "all namespaces" : "namespace " + scope;
    for (const auto& type : {myresources, myop::kube::resources::deployments()}) {
      auto listed = client.list(type, scope, options);
      if (!listed && listed.error().reason == Reason::Forbidden) {
        spdlog::critical(
            "RBAC forbids listing {} in {}: {} (grant the operator's ServiceAccount the rules in "
            "config/rbac, or install the Helm chart)",
            type.resource, where, listed.error().message);
        return false;
      }
      if (!listed) {
        spdlog::critical("listing {} in {} failed: {}", type.resource, where, listed.error().message);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // glibc gives busy threads arenas of their own (up to 8 per core); the HTTP client's ~40 pool threads
  // spread small, long-lived cache objects over many of them. Two arenas: 3 MiB less RSS with 1000
  // objects cached (bench/run, create + idle), same CPU. MALLOC_ARENA_MAX in the environment wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  Options options;
  CLI::App app{"my-operator: reconciles MyResource (myorg.io/v1alpha1) objects into Deployments"};
  app.set_version_flag("--version", std::string("my-operator ") + myop::kVersion);

  auto add = [&](const std::string& flag, auto& value, const std::string& help) {
    return app.add_option("--" + flag, value, help)->envname(environment_name(flag))->capture_default_str();
  };
  add("kubeconfig", options.kubeconfig,
      "Path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
  add("context", options.context, "Kubeconfig context to use (default: current-context)");
  add("namespaces", options.namespaces, "Comma-separated namespaces to watch; empty watches all namespaces");
  add("metrics-bind-address", options.metrics_bind_address,
      "Address the /metrics endpoint binds to; 0 disables it");
  add("health-probe-bind-address", options.health_probe_bind_address, "Address /healthz and /readyz bind to");
  app.add_flag("--metrics-secure", options.metrics_secure,
               "Serve /metrics over HTTPS, only to bearer tokens allowed `get` on /metrics (TokenReview + "
               "SubjectAccessReview)")
      ->envname(environment_name("metrics-secure"));
  add("metrics-cert-dir", options.metrics_cert_dir,
      "Folder of the metrics serving certificate, reloaded when it changes; empty: a self-signed one (with "
      "--metrics-secure)");
  add("metrics-cert-name", options.metrics_cert_name, "Certificate file name in --metrics-cert-dir");
  add("metrics-key-name", options.metrics_key_name, "Private key file name in --metrics-cert-dir");
  app.add_flag("--leader-elect", options.leader_elect, "Elect a leader through a coordination.k8s.io Lease")
      ->envname(environment_name("leader-elect"));
  add("leader-election-namespace", options.leader_election_namespace,
      "Namespace of the leader-election Lease (default: the operator's namespace)");
  add("leader-election-id", options.leader_election_id, "Name of the leader-election Lease");
  add("max-concurrent-reconciles", options.max_concurrent_reconciles, "Number of reconcile workers")
      ->check(CLI::Range(1, 1024));
  add("qps", options.qps,
      "Client-side request rate limit (requests per second); 0: none, the API server's Priority and Fairness "
      "limits us (429 with Retry-After, honoured)")
      ->check(CLI::NonNegativeNumber);
  add("burst", options.burst, "Client-side request burst (with --qps above 0)")->check(CLI::PositiveNumber);
  add("resync-period", options.resync_period, "Period of the low-priority full resync, e.g. 10h");
  add("orphan-sweep-period", options.orphan_sweep_period,
      "Period of the orphan sweep (Deployments managed by my-operator whose owner is gone), e.g. 5m; the "
      "first "
      "pass runs 30 s after start, or after one period when that is shorter");
  add("config-map", options.config_map, "Feature-flag ConfigMap in the operator's namespace");
  add("log-level", options.log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  add("log-format", options.log_format, "json|text")->check(CLI::IsMember({"json", "text"}));
  app.add_flag("--insecure-skip-tls-verify-allowed", options.allow_insecure_skip_tls_verify,
               "Accept a kubeconfig cluster with insecure-skip-tls-verify (warned about at every start)")
      ->envname(environment_name("insecure-skip-tls-verify-allowed"));

  CLI11_PARSE(app, argc, argv);
  if (!options.metrics_secure && !options.metrics_cert_dir.empty()) {
    std::cerr << "--metrics-cert-dir needs --metrics-secure (metrics are plain HTTP without it)\n";
    return EXIT_FAILURE;
  }
  std::chrono::seconds resync_period;
  std::chrono::seconds orphan_sweep_period;
  try {
    resync_period = parse_duration("--resync-period", options.resync_period);
    orphan_sweep_period = parse_duration("--orphan-sweep-period", options.orphan_sweep_period);
    if (orphan_sweep_period.count() <= 0)
      throw CLI::ValidationError("--orphan-sweep-period", "must be at least 1s");
  } catch (const CLI::Error& error) {
    return app.exit(error);
  }

  // Signals are blocked for every thread made after this; only the watcher's thread takes them.
  std::stop_source stop;
  myop::runtime::SignalWatcher signals(stop);
  myop::runtime::configure_logging(
      options.log_format == "json" ? myop::runtime::LogFormat::json : myop::runtime::LogFormat::text,
      spdlog::level::from_str(options.log_level));

  const std::vector<std::string> namespaces = split_namespaces(options.namespaces);
  // Each open watch holds a pool thread while it streams: room for every informer plus the requests.
  crossplat::threadpool::initialize_with_threads(
      std::max<std::size_t>(40, 16 + 4 * std::max<std::size_t>(namespaces.size(), 1)));

  myop::kube::ConfigSearch search;
  search.kubeconfig_path = options.kubeconfig;
  search.context = options.context;
  search.allow_insecure_skip_tls_verify = options.allow_insecure_skip_tls_verify;
  auto config = myop::kube::load_client_config(search);
  if (!config) {
    spdlog::critical("no usable cluster configuration: {}", config.error().message);
    return EXIT_FAILURE;
  }

  auto registry = std::make_shared<prometheus::Registry>();
  myop::kube::TransportOptions transport_options;
  transport_options.qps = options.qps;
  transport_options.burst = options.burst;
  transport_options.user_agent = std::string("my-operator/") + myop::kVersion;
  transport_options.metrics = myop::kube::make_prometheus_request_metrics(*registry);
  auto transport = myop::kube::make_https_transport(config.value(), transport_options);
  if (!transport) {
    spdlog::critical("cannot set up the connection to {}: {}", config->server, transport.error().message);
    return EXIT_FAILURE;
  }
  auto client =
      std::make_shared<myop::kube::Client>(transport.value(), std::string(myop::myresource::kFieldManager));

  const std::string own_namespace = operator_namespace(config.value());
  const std::string identity = host_name();
  spdlog::info(
      "my-operator {} starting: server={} context={} namespaces={} operator-namespace={} leader-elect={} "
      "max-concurrent-reconciles={} qps={} burst={} resync-period={}s orphan-sweep-period={}s config-map={} "
      "metrics={} metrics-secure={} metrics-cert={} probes={}",
      myop::kVersion, config->server, config->context_name.empty() ? "(in-cluster)" : config->context_name,
      namespaces.empty() ? "(all)" : options.namespaces, own_namespace, options.leader_elect,
      options.max_concurrent_reconciles, options.qps, options.burst, resync_period.count(),
      orphan_sweep_period.count(), options.config_map, options.metrics_bind_address, options.metrics_secure,
      !options.metrics_secure            ? std::string("(plain HTTP)")
      : options.metrics_cert_dir.empty() ? std::string("(self-signed)")
                                         : options.metrics_cert_dir + "/{" + options.metrics_cert_name + "," +
                                               options.metrics_key_name + "}",
      options.health_probe_bind_address);

  if (!preflight(*client, namespaces)) return EXIT_FAILURE;

  myop::runtime::ManagerOptions manager_options;
  manager_options.metrics_bind_address = options.metrics_bind_address;
  manager_options.health_probe_bind_address = options.health_probe_bind_address;
  manager_options.registry = registry;
  if (options.metrics_secure) {
    // Every scrape is authenticated (TokenReview) and authorized (SubjectAccessReview, `get` on
    // /metrics) by the API server, as controller-runtime's WithAuthenticationAndAuthorization.
    manager_options.metrics_secure = true;
    manager_options.metrics_cert_dir = options.metrics_cert_dir;
    manager_options.metrics_cert_name = options.metrics_cert_name;
    manager_options.metrics_key_name = options.metrics_key_name;
    // A scrape waits for its reviews (the metrics server has one thread), so they get a client
    // of their own that gives up within seconds, as controller-runtime's filter does (10 s per
    // request; 4 retries from 0.5 s, about 7 s of waiting): an unreachable API server answers 500
    // rather than stalling every scrape.
    myop::kube::TransportOptions review_options = transport_options;
    review_options.default_timeout = std::chrono::seconds(10);
    review_options.retry.max_retries = 4;
    review_options.retry.initial_backoff = std::chrono::milliseconds(500);
    review_options.retry.max_backoff = std::chrono::milliseconds(2500);
    auto review_transport = myop::kube::make_https_transport(config.value(), review_options);
    if (!review_transport) {
      spdlog::critical("cannot set up the connection to {}: {}", config->server,
                       review_transport.error().message);
      return EXIT_FAILURE;
    }
    manager_options.metrics_authorizer = std::make_shared<myop::runtime::MetricsAuthorizer>(
        std::make_shared<myop::runtime::KubeAccessReviewer>(std::make_shared<myop::kube::Client>(
            review_transport.value(), std::string(myop::myresource::kFieldManager))));
  }
  std::shared_ptr<myop::runtime::LeaseLeaderElector> elector;
  if (options.leader_elect) {
    myop::runtime::LeaderElectionOptions election;
    election.namespace_name =
        options.leader_election_namespace.empty() ? own_namespace : options.leader_election_namespace;
    election.name = options.leader_election_id;
    election.registry = registry;
    elector = std::make_shared<myop::runtime::LeaseLeaderElector>(client, election);
    manager_options.leader_elector = elector;
  }
  myop::runtime::Manager manager(manager_options);

  myop::myresource::OperatorOptions operator_options;
  operator_options.namespaces = namespaces;
  operator_options.operator_namespace = own_namespace;
  operator_options.config_map = options.config_map;
  operator_options.max_concurrent_reconciles = options.max_concurrent_reconciles;
  operator_options.resync_period = resync_period;
  operator_options.orphan_sweep_period = orphan_sweep_period;
  operator_options.reporting_instance = identity;
  operator_options.version = myop::kVersion;
  operator_options.registry = registry;
  myop::myresource::Operator my_operator(client, operator_options);
  if (elector) my_operator.set_may_write([elector] { return elector->may_write(); });
  my_operator.register_with(manager);

  const int exit_code = manager.run(stop.get_token());
  spdlog::info("my-operator stopped (exit code {})", exit_code);
  return exit_code;
}
