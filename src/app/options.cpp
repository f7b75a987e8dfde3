#include "app/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "trace/otlp_http_exporter.h"
#include "version.h"

namespace myop::app {

std::string environment_name(const std::string& flag) {
  std::string name = "MYOP_";
  for (char c : flag)
    name += (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::chrono::seconds parse_duration(const std::string& text) {
  std::chrono::seconds total{0};
  std::size_t position = 0;
  if (text.empty()) throw std::invalid_argument("empty duration");
  while (position < text.size()) {
    std::size_t digits = position;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
    if (digits == position || digits == text.size())
      throw std::invalid_argument("'" + text + "' is not a duration such as 10h, 30m or 1h30m");
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
        throw std::invalid_argument("'" + text + "' has an unknown unit (use h, m or s)");
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

namespace {

// The flags CLI11 reads as text and parse_options turns into durations after checking them.
struct DurationFlags {
  std::string resync_period = "10h";
  std::string orphan_sweep_period = "5m";
  std::string stuck_deletion_timeout = "60s";
  std::string watch_stall_timeout = "90s";
  std::string storage_migration_interval = "10m";
  std::string storage_migration_retry_interval = "30s";
  std::string webhook_cert_validity = "8760h";
  std::string webhook_ca_validity = "87600h";
  std::string webhook_cert_check_interval = "1m";
};

// Every flag, its help, default and variable, into `options` and `durations`: the one definition
// behind parse_options and describe_flags.
void define_flags(CLI::App& app, Options& options, DurationFlags& durations) {
  app.description(
      "my-operator: reconciles MyResource (myorg.io/v1beta1; v1alpha1 converted) objects into Deployments");
  app.set_version_flag("--version", std::string("my-operator ") + myop::kVersion);

  auto add = [&](const std::string& flag, auto& value, const std::string& help) {
    return app.add_option("--" + flag, value, help)->envname(environment_name(flag))->capture_default_str();
  };
  auto add_flag = [&](const std::string& flag, bool& value, const std::string& help) {
    return app.add_flag("--" + flag, value, help)->envname(environment_name(flag));
  };
  add("kubeconfig", options.kubeconfig,
      "Path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
  add("context", options.context, "Kubeconfig context to use (default: current-context)");
  add("namespaces", options.namespaces_flag,
      "Comma-separated namespaces to watch; empty watches all namespaces");
  add("metrics-bind-address", options.metrics_bind_address,
      "Address the /metrics endpoint binds to; 0 disables it");
  add("health-probe-bind-address", options.health_probe_bind_address, "Address /healthz and /readyz bind to");
  add_flag("metrics-secure", options.metrics_secure,
           "Serve /metrics over HTTPS, only to bearer tokens allowed `get` on /metrics (TokenReview + "
           "SubjectAccessReview)");
  add("metrics-cert-dir", options.metrics_cert_dir,
      "Folder of the metrics serving certificate, reloaded when it changes; empty: a self-signed one (with "
      "--metrics-secure)");
  add("metrics-cert-name", options.metrics_cert_name, "Certificate file name in --metrics-cert-dir");
  add("metrics-key-name", options.metrics_key_name, "Private key file name in --metrics-cert-dir");
  add_flag("leader-elect", options.leader_elect, "Elect a leader through a coordination.k8s.io Lease");
  add("leader-election-namespace", options.leader_election_namespace,
      "Namespace of the leader-election Lease (default: the operator's namespace)");
  add("leader-election-id", options.leader_election_id, "Name of the leader-election Lease");
  add_flag("sharding", options.sharding,
           "Share the work among every replica by shard slot (namespaces' FNV-1a hashes), on member and slot "
           "Leases in the leader-election namespace; replaces --leader-elect");
  add("shard-group", options.shard_group, "Name prefix of the sharding Leases (with --sharding)");
  add_flag("fleet-kubeconfig-secrets", options.fleet_kubeconfig_secrets,
           "Also reconcile the member clusters whose kubeconfigs are in Secrets of the operator's namespace "
           "labelled sigs.k8s.io/multicluster-runtime-kubeconfig (key kubeconfig), engaged and disengaged "
           "as the Secrets come and go");
  add("fleet-cluster-profile-providers", options.fleet_cluster_profile_providers,
      "Also reconcile the member clusters of the ClusterProfiles (multicluster.x-k8s.io/v1alpha1) in "
      "--fleet-cluster-profile-namespace, with credentials from the exec plugins of this access "
      "provider file (cluster-inventory-api's format)");
  add("fleet-cluster-profile-namespace", options.fleet_cluster_profile_namespace,
      "Namespace of the ClusterProfiles (default: the operator's namespace)");
  add("max-concurrent-reconciles", options.max_concurrent_reconciles, "Number of reconcile workers")
      ->check(CLI::Range(1, 1024));
  add("qps", options.qps,
      "Client-side request rate limit (requests per second); 0: none, the API server's Priority and Fairness "
      "limits us (429 with Retry-After, honoured)")
      ->check(CLI::NonNegativeNumber);
  add("burst", options.burst, "Client-side request burst (with --qps above 0)")->check(CLI::PositiveNumber);
  add("wire-format", options.wire_format,
      "How reads of built-in kinds (Deployments, Leases, Secrets, ...) travel: protobuf (falling back to "
      "JSON where the API server answers JSON) or json; writes are JSON")
      ->check(CLI::IsMember({"protobuf", "json"}));
  add("custom-resource-wire-format", options.custom_resource_wire_format,
      "How reads of custom resources (MyResources) travel: cbor (where the API server serves it, behind its "
      "CBORServingAndStorage feature gate; JSON elsewhere) or json")
      ->check(CLI::IsMember({"cbor", "json"}));
  add("resync-period", durations.resync_period, "Period of the low-priority full resync, e.g. 10h");
  add("orphan-sweep-period", durations.orphan_sweep_period,
      "Period of the orphan sweep (Deployments managed by my-operator whose owner is gone), e.g. 5m; the "
      "first "
      "pass runs 30 s after start, or after one period when that is shorter");
  add("stuck-deletion-timeout", durations.stuck_deletion_timeout,
      "A Deployment of a MyResource in foreground deletion this much longer than its pods' termination grace "
      "period is deleted again in background (the garbage collector missed it), e.g. 60s");
  add("watch-stall-timeout", durations.watch_stall_timeout,
      "A watch with no event and no bookmark for this long is taken as stalled and reconnected, e.g. 90s; "
      "at least 65s, above the API server's one-minute bookmark interval");
  add("migrate-storage", options.migrate_storage,
      "While leading, rewrite MyResources stored in an older API version into the CRD's storage version "
      "(one no-op write each, rate-limited), then trim the CRD's status.storedVersions; only when watching "
      "all namespaces");
  add("storage-migration-qps", options.storage_migration_qps,
      "No-op writes per second of the storage version migration");
  add("storage-migration-interval", durations.storage_migration_interval,
      "How often the storage version migration reads the CRD for a new storage version, e.g. 10m");
  add("storage-migration-retry-interval", durations.storage_migration_retry_interval,
      "How soon a storage migration pass that was interrupted, or left objects the API server refused, is "
      "tried again, e.g. 30s");
  add("webhook-bind-address", options.webhook_bind_address,
      "Address the conversion webhook (HTTPS, POST /convert) binds to, e.g. :9443; 0 disables it");
  add_flag("webhook-only", options.webhook_only,
           "Serve only the conversion webhook and the health probes: no controller, leader election or "
           "storage migration (needs --webhook-bind-address)");
  add("webhook-cert-dir", options.webhook_cert_dir,
      "Folder of the webhook's tls.crt and tls.key (cert-manager), reloaded when they change; empty: the "
      "operator manages a CA and the certificate in --webhook-secret and the CRDs' caBundle");
  add("webhook-secret", options.webhook_secret,
      "Secret in the operator's namespace holding the self-managed webhook CA and certificate");
  add("webhook-ca-secret", options.webhook_ca_secret,
      "Secret in the operator's namespace holding the self-managed webhook CA's key (ca.crt, ca.key), apart "
      "from --webhook-secret; empty: <--webhook-secret>-ca");
  add("webhook-service", options.webhook_service,
      "Service the API server reaches the webhook by: the certificate names <service>.<namespace>.svc and "
      "<service>.<namespace>.svc.cluster.local");
  add("webhook-cert-names", options.webhook_cert_names_flag,
      "More names for the self-managed webhook certificate, comma-separated (the host of a webhook URL)");
  // `--webhook-crds=` means none. expected(0, 1) keeps it from taking the next argument as its value,
  // and without capture_default_str an empty value is not replaced by the default.
  app.add_option("--webhook-crds", options.webhook_crds_flag,
                 "CRDs whose conversion webhook caBundle the operator keeps current, comma-separated "
                 "(default: myresources.myorg.io); empty: none (the caBundle is someone else's)")
      ->envname(environment_name("webhook-crds"))
      ->expected(0, 1);
  add("webhook-cert-validity", durations.webhook_cert_validity,
      "Validity of the self-managed webhook serving certificate (renewed when a third is left)");
  add("webhook-ca-validity", durations.webhook_ca_validity,
      "Validity of the self-managed webhook CA (renewed when a third is left; the old one stays trusted "
      "until "
      "it expires)");
  add("webhook-max-request-bytes", options.webhook_max_request_bytes,
      "Largest ConversionReview body the webhook reads (413 beyond), e.g. 8Mi; it buffers four such at once "
      "(503 beyond). 500 MyResources are about 1 MiB")
      ->transform(CLI::AsSizeValue(true))
      ->check(CLI::Range(std::uint64_t{64} << 10U, std::uint64_t{1} << 30U));
  add("webhook-cert-check-interval", durations.webhook_cert_check_interval,
      "How often the self-managed webhook certificates and the CRDs' caBundle are checked (renewed when "
      "due); "
      "at most a tenth of --webhook-cert-validity");
  add("config-map", options.config_map, "Feature-flag ConfigMap in the operator's namespace");
  add("otlp-endpoint", options.otlp_endpoint,
      "OpenTelemetry collector to send reconcile traces to over OTLP/HTTP (JSON), e.g. "
      "http://otel-collector:4318 (/v1/traces is appended); empty: tracing off");
  add("trace-sampling-ratio", options.trace_sampling_ratio,
      "Share of reconcile traces recorded, from 0 to 1, decided on the trace id (with --otlp-endpoint)")
      ->check(CLI::Range(0.0, 1.0));
  add("log-level", options.log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  add("log-format", options.log_format, "json|text")->check(CLI::IsMember({"json", "text"}));
}

}  // namespace

std::variant<Options, int> parse_options(int argc, char** argv) {
  Options options;
  DurationFlags durations;
  CLI::App app;
  define_flags(app, options, durations);

  try {
    app.parse(argc, argv);
    if (options.sharding && options.leader_elect) {
      throw CLI::ValidationError("--sharding",
                                 "replaces --leader-elect (every replica works, on its own shard "
                                 "slots): give one of them");
    }
    if (options.sharding && !split_namespaces(options.namespaces_flag).empty()) {
      throw CLI::ValidationError("--sharding",
                                 "needs every namespace watched (shards are namespaces' hashes): "
                                 "drop --namespaces");
    }
    if (!options.metrics_secure && !options.metrics_cert_dir.empty()) {
      throw CLI::ValidationError("--metrics-cert-dir",
                                 "needs --metrics-secure (metrics are plain HTTP without it)");
    }
    if (!options.otlp_endpoint.empty() && !trace::otlp_traces_url(options.otlp_endpoint)) {
      throw CLI::ValidationError("--otlp-endpoint", "'" + options.otlp_endpoint +
                                                        "' is not an http:// or https:// URL with a host, "
                                                        "such as http://otel-collector:4318");
    }
    const auto duration = [](const std::string& flag, const std::string& text) {
      try {
        return parse_duration(text);
      } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError(flag, error.what());
      }
    };
    options.resync_period = duration("--resync-period", durations.resync_period);
    options.orphan_sweep_period = duration("--orphan-sweep-period", durations.orphan_sweep_period);
    if (options.orphan_sweep_period.count() <= 0) {
      throw CLI::ValidationError("--orphan-sweep-period", "must be at least 1s");
    }
    options.stuck_deletion_timeout = duration("--stuck-deletion-timeout", durations.stuck_deletion_timeout);
    if (options.stuck_deletion_timeout.count() <= 0) {
      throw CLI::ValidationError("--stuck-deletion-timeout", "must be at least 1s");
    }
    options.watch_stall_timeout = duration("--watch-stall-timeout", durations.watch_stall_timeout);
    if (!(options.storage_migration_qps > 0))
      throw CLI::ValidationError("--storage-migration-qps", "must be more than 0");
    options.storage_migration_interval =
        duration("--storage-migration-interval", durations.storage_migration_interval);
    options.storage_migration_retry_interval =
        duration("--storage-migration-retry-interval", durations.storage_migration_retry_interval);
    if (options.storage_migration_interval.count() <= 0 ||
        options.storage_migration_retry_interval.count() <= 0)
      throw CLI::ValidationError("--storage-migration-interval", "intervals must be at least 1s");
    options.webhook_cert_validity = duration("--webhook-cert-validity", durations.webhook_cert_validity);
    options.webhook_ca_validity = duration("--webhook-ca-validity", durations.webhook_ca_validity);
    options.webhook_cert_check_interval =
        duration("--webhook-cert-check-interval", durations.webhook_cert_check_interval);
    if (options.webhook_cert_check_interval.count() <= 0)
      throw CLI::ValidationError("--webhook-cert-check-interval", "must be at least 1s");
    if (options.webhook_cert_validity.count() <= 0 || options.webhook_ca_validity.count() <= 0)
      throw CLI::ValidationError("--webhook-cert-validity", "validities must be more than 0");
    if (options.webhook_cert_validity > options.webhook_ca_validity)
      throw CLI::ValidationError("--webhook-cert-validity",
                                 "must not be longer than --webhook-ca-validity (the CA signs it)");
    if (options.webhook_only && (options.webhook_bind_address.empty() || options.webhook_bind_address == "0"))
      throw CLI::ValidationError("--webhook-only",
                                 "needs --webhook-bind-address (the webhook is all it serves)");
    if (options.webhook_only &&
        (options.leader_elect || options.sharding || options.fleet_kubeconfig_secrets ||
         !options.fleet_cluster_profile_providers.empty()))
      throw CLI::ValidationError("--webhook-only",
                                 "runs no controller: --leader-elect, --sharding and the --fleet-* "
                                 "flags do not apply");
    options.webhook_cert_names = split_namespaces(options.webhook_cert_names_flag);
    options.webhook_crds = split_namespaces(options.webhook_crds_flag);
    if (options.watch_stall_timeout < std::chrono::seconds(65)) {
      throw CLI::ValidationError("--watch-stall-timeout",
                                 "must be at least 65s: the API server sends a bookmark only about every "
                                 "minute, so a shorter timeout would cut healthy quiet watches");
    }
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  options.namespaces = split_namespaces(options.namespaces_flag);
  return options;
}

std::vector<FlagDescription> describe_flags() {
  Options options;
  DurationFlags durations;
  CLI::App app;
  define_flags(app, options, durations);
  std::vector<FlagDescription> flags;
  for (const CLI::Option* option : std::as_const(app).get_options()) {
    flags.push_back(
        {option->get_name(), option->get_envname(), option->get_default_str(), option->get_description()});
  }
  return flags;
}

}  // namespace myop::app
