#include "app/bootstrap.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include "base/uuid.h"
#include "kube/config.h"
#include "kube/connect.h"
#include "kube/request_metrics.h"
#include "kube/transport.h"
#include "myresource/conversion_review.h"
#include "myresource/desired.h"
#include "myresource/preflight.h"
#include "myresource/types.h"
#include "runtime/election/leader_election.h"
#include "runtime/fleet/cluster_profile.h"
#include "runtime/http/metrics_authorizer.h"
#include "runtime/migration/storage_migration.h"
#include "trace/otlp_http_exporter.h"
#include "version.h"

namespace myop::app {
namespace {

// The program's name: its User-Agent, the service and tracer names of its traces, the subject of its
// self-managed webhook certificates.
constexpr std::string_view kProgram = "my-operator";

// The operator's own namespace: POD_NAMESPACE (downward API), else the kubeconfig context's or the
// in-cluster service account's namespace.
std::string own_namespace(const kube::ClientConfig& config) {
  if (const char* pod_namespace = std::getenv("POD_NAMESPACE"); pod_namespace && *pod_namespace != '\0')
    return pod_namespace;
  return config.namespace_name.empty() ? "default" : config.namespace_name;
}

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) return "my-operator";
  return buffer;
}

kube::Error failure(std::string message) {
  return kube::make_error(kube::Reason::InvalidConfiguration, std::move(message));
}

std::string metrics_certificate(const Options& options) {
  if (!options.metrics_secure) return "(plain HTTP)";
  if (options.metrics_cert_dir.empty()) return "(self-signed)";
  return options.metrics_cert_dir + "/{" + options.metrics_cert_name + "," + options.metrics_key_name + "}";
}

// Every scrape is authenticated (TokenReview) and authorized (SubjectAccessReview, `get` on
// /metrics) by the API server, as controller-runtime's WithAuthenticationAndAuthorization. A scrape
// waits for its reviews, so they get a client of their own that gives up within seconds (10 s per
// request; 4 retries from 0.5 s): an unreachable API server answers 500 rather than stalling scrapes.
kube::Result<std::shared_ptr<runtime::MetricsAuthorizer>> metrics_authorizer(
    const kube::ClientConfig& config, const kube::TransportOptions& transport_options) {
  kube::TransportOptions review_options = transport_options;
  review_options.default_timeout = std::chrono::seconds(10);
  review_options.retry.max_retries = 4;
  review_options.retry.initial_backoff = std::chrono::milliseconds(500);
  review_options.retry.max_backoff = std::chrono::milliseconds(2500);
  auto transport = kube::make_https_transport(config, review_options);
  if (!transport)
    return failure("cannot set up the connection to " + config.server + ": " + transport.error().message);
  auto client = std::make_shared<kube::Client>(transport.value(), std::string(myresource::kFieldManager));
  return std::make_shared<runtime::MetricsAuthorizer>(std::make_shared<runtime::KubeAccessReviewer>(client));
}

// Spans -> bounded batch queue -> OTLP/HTTP; null when no endpoint is set (tracing off).
std::shared_ptr<trace::Tracer> make_tracer(const Options& options, prometheus::Registry& registry) {
  if (options.otlp_endpoint.empty()) return nullptr;
  trace::OtlpHttpOptions exporter;
  exporter.endpoint = options.otlp_endpoint;
  exporter.resource.service_name = std::string(kProgram);
  exporter.resource.service_version = myop::kVersion;
  exporter.resource.scope_name = std::string(kProgram) + "/trace";
  auto processor = std::make_shared<trace::BatchSpanProcessor>(trace::make_otlp_http_exporter(exporter),
                                                               trace::BatchOptions{}, &registry);
  return std::make_shared<trace::Tracer>(trace::RatioSampler(options.trace_sampling_ratio),
                                         std::move(processor));
}

// --fleet-cluster-profile-providers: the provider file read and checked, and the ClusterProfile CRD
// served by the hub (else its informer would fail forever, the process never ready).
kube::Result<runtime::fleet::FleetOptions::ClusterProfiles> cluster_profile_source(
    kube::Client& client, const Options& options, const std::string& operator_namespace) {
  const std::string& path = options.fleet_cluster_profile_providers;
  std::ifstream file(path, std::ios::binary);
  if (!file) return failure("--fleet-cluster-profile-providers: cannot read " + path);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  auto providers = runtime::fleet::parse_access_providers(text, path);
  if (!providers) return failure("--fleet-cluster-profile-providers: " + providers.error());
  const kube::ResourceType type = runtime::fleet::cluster_profiles();
  if (auto served = client.resource_for_kind(type.group, type.version, type.kind); !served) {
    return failure(
        "--fleet-cluster-profile-providers needs the ClusterProfile CRD (" + type.group + "/" + type.version +
        ", from the sigs.k8s.io/cluster-inventory-api module) in the cluster: " + served.error().message);
  }
  return runtime::fleet::FleetOptions::ClusterProfiles{options.fleet_cluster_profile_namespace.empty()
                                                           ? operator_namespace
                                                           : options.fleet_cluster_profile_namespace,
                                                       std::move(providers).value()};
}

}  // namespace

void finish_tracing(runtime::Manager& manager) {
  if (!manager.tracer()) return;
  if (!manager.tracer()->processor().shutdown(kTraceFlushTimeout))
    spdlog::warn("trace spans still queued after {} s at shutdown were dropped",
                 std::chrono::duration_cast<std::chrono::seconds>(kTraceFlushTimeout).count());
}

void tune_process() {
  // glibc gives busy threads arenas of their own (up to 8 per core); the workers and the watch threads
  // would spread small, long-lived cache objects over many of them. MALLOC_ARENA_MAX in the environment
  // wins.
  // Called before any thread starts, so glibc's "MT-Unsafe" mallopt is safe here.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);  // NOLINT(concurrency-mt-unsafe)
}

kube::Result<std::unique_ptr<runtime::Manager>> make_manager(const Options& options,
                                                             std::string& operator_namespace) {
  kube::ConfigSearch search;
  search.kubeconfig_path = options.kubeconfig;
  search.context = options.context;
  auto registry = std::make_shared<prometheus::Registry>();
  kube::TransportOptions transport_options;
  transport_options.qps = options.qps;
  transport_options.burst = options.burst;
  transport_options.user_agent = std::string(kProgram) + "/" + myop::kVersion;
  transport_options.metrics = kube::make_prometheus_request_metrics(*registry);
  kube::ClientOptions client_options;
  client_options.built_in_kinds =
      options.wire_format == "json" ? kube::WireFormat::Json : kube::WireFormat::Protobuf;
  client_options.custom_resources =
      options.custom_resource_wire_format == "json" ? kube::WireFormat::Json : kube::WireFormat::Cbor;
  auto connection =
      kube::connect(search, transport_options, std::string(myresource::kFieldManager), client_options);
  if (!connection) return std::move(connection).error();
  const kube::ClientConfig& config = connection->config;
  auto client = connection->client;

  operator_namespace = own_namespace(config);
  spdlog::info(
      "my-operator {} starting: server={} context={} namespaces={} operator-namespace={} leader-elect={} "
      "sharding={} "
      "max-concurrent-reconciles={} qps={} burst={} resync-period={}s orphan-sweep-period={}s "
      "watch-stall-timeout={}s config-map={} "
      "metrics={} metrics-secure={} metrics-cert={} probes={} otlp-endpoint={} trace-sampling-ratio={}",
      myop::kVersion, config.server, config.context_name.empty() ? "(in-cluster)" : config.context_name,
      options.namespaces.empty() ? "(all)" : options.namespaces_flag, operator_namespace,
      options.leader_elect, options.sharding, options.max_concurrent_reconciles, options.qps, options.burst,
      options.resync_period.count(), options.orphan_sweep_period.count(), options.watch_stall_timeout.count(),
      options.config_map, options.metrics_bind_address, options.metrics_secure, metrics_certificate(options),
      options.health_probe_bind_address,
      options.otlp_endpoint.empty() ? "(tracing off)" : options.otlp_endpoint, options.trace_sampling_ratio);

  if (options.webhook_only) {
    spdlog::info("webhook only: serving the conversion webhook on {} and the probes, no controller",
                 options.webhook_bind_address);
  } else {
    if (auto checked = myresource::preflight(*client, options.namespaces); !checked)
      return std::move(checked).error();
  }

  const std::string identity = host_name();
  runtime::ManagerOptions manager;
  manager.client = client;
  manager.field_manager = std::string(myresource::kFieldManager);
  manager.namespaces = options.namespaces;
  manager.informers.informer.resync_period = options.resync_period;
  manager.informers.informer.watcher.stall_timeout = options.watch_stall_timeout;
  manager.events.reporting_controller = "myorg.io/my-operator";
  manager.events.reporting_instance = identity;
  manager.metrics_bind_address = options.metrics_bind_address;
  manager.health_probe_bind_address = options.health_probe_bind_address;
  manager.registry = registry;
  manager.tracer = make_tracer(options, *registry);
  if (options.metrics_secure) {
    manager.metrics_secure = true;
    manager.metrics_cert_dir = options.metrics_cert_dir;
    manager.metrics_cert_name = options.metrics_cert_name;
    manager.metrics_key_name = options.metrics_key_name;
    auto authorizer = metrics_authorizer(config, transport_options);
    if (!authorizer) return std::move(authorizer).error();
    manager.metrics_authorizer = authorizer.value();
  }
  if (options.webhook_bind_address != "0" && !options.webhook_bind_address.empty()) {
    manager.webhook_bind_address = options.webhook_bind_address;
    manager.webhook_server_limits.max_post_body = options.webhook_max_request_bytes;
    manager.webhook_server_limits.max_buffered_bytes = 4 * options.webhook_max_request_bytes;
    manager.webhook_cert_dir = options.webhook_cert_dir;
    if (options.webhook_cert_dir.empty()) {
      runtime::WebhookCertificateManagerOptions certificates;
      certificates.client = client;
      certificates.secret_namespace = operator_namespace;
      certificates.secret_name = options.webhook_secret;
      certificates.ca_secret_name = options.webhook_ca_secret;
      certificates.service_name = options.webhook_service;
      certificates.crd_names = options.webhook_crds;
      certificates.managed_by = std::string(myresource::kManagedByValue);
      certificates.settings.organization = std::string(kProgram);
      certificates.settings.ca_name = std::string(kProgram) + "-webhook-ca";
      certificates.registry = registry;
      certificates.clock = manager.clock;
      certificates.metrics_prefix = "myoperator_webhook_certificate";
      certificates.ca_key_moved_annotation = "myorg.io/webhook-ca-key-moved-at";
      const std::string service = options.webhook_service + "." + operator_namespace + ".svc";
      certificates.settings.names = {service, service + ".cluster.local"};
      certificates.settings.names.insert(certificates.settings.names.end(),
                                         options.webhook_cert_names.begin(),
                                         options.webhook_cert_names.end());
      certificates.settings.serving_validity = options.webhook_cert_validity;
      certificates.settings.ca_validity = options.webhook_ca_validity;
      // Checked often enough that a short validity (a test's) is renewed in time.
      certificates.check_interval = std::min<std::chrono::seconds>(
          options.webhook_cert_check_interval,
          std::max<std::chrono::seconds>(options.webhook_cert_validity / 10, std::chrono::seconds(1)));
      manager.webhook_certificates = std::make_shared<runtime::WebhookCertificateManager>(certificates);
    }
  }
  std::shared_ptr<runtime::LeaseLeaderElector> leader_elector;
  if (options.leader_elect) {
    runtime::LeaderElectionOptions election;
    election.namespace_name =
        options.leader_election_namespace.empty() ? operator_namespace : options.leader_election_namespace;
    election.name = options.leader_election_id;
    election.registry = registry;
    election.clock = manager.clock;
    leader_elector = std::make_shared<runtime::LeaseLeaderElector>(client, election);
    manager.leader_elector = leader_elector;
  }
  if (options.sharding) {
    runtime::ShardingOptions sharding;
    sharding.namespace_name =
        options.leader_election_namespace.empty() ? operator_namespace : options.leader_election_namespace;
    sharding.name = options.shard_group;
    sharding.group_label = "myorg.io/shard-group";
    sharding.metrics_prefix = "myoperator_shard";
    sharding.clock = manager.clock;
    // The pod's name when it runs in a cluster (downward API), so the Leases say which pod holds what;
    // a random suffix keeps a restarted process a new member.
    const char* pod_name = std::getenv("POD_NAME");
    sharding.identity = (pod_name != nullptr && *pod_name != '\0' ? std::string(pod_name) : identity) + "_" +
                        base::random_uuid().substr(0, 8);
    manager.sharding = sharding;
  }
  if (options.fleet_kubeconfig_secrets || !options.fleet_cluster_profile_providers.empty()) {
    runtime::fleet::FleetOptions fleet;
    fleet.namespace_name = operator_namespace;
    fleet.kubeconfig_secrets = options.fleet_kubeconfig_secrets;
    if (!options.fleet_cluster_profile_providers.empty()) {
      auto profiles = cluster_profile_source(*client, options, operator_namespace);
      if (!profiles) return std::move(profiles).error();
      fleet.cluster_profiles = std::move(profiles).value();
    }
    fleet.transport = transport_options;
    // Sharded, several replicas write to a member under one identity (its Secret's): the User-Agent
    // says which replica sent what, in the member's audit log.
    if (manager.sharding) fleet.transport.user_agent += " (" + manager.sharding->identity + ")";
    fleet.client = client_options;
    manager.fleet = std::move(fleet);
  }
  auto built = std::make_unique<runtime::Manager>(std::move(manager));
  if (options.migrate_storage && options.namespaces.empty() && !options.webhook_only) {
    runtime::StorageVersionMigratorOptions migration;
    migration.client = client;
    migration.crd_name = std::string(myresource::kCrdName);
    migration.field_manager = std::string(myresource::kFieldManager) + "-storage-migration";
    migration.qps = options.storage_migration_qps;
    migration.burst = std::max(1, static_cast<int>(options.storage_migration_qps));
    migration.check_interval = options.storage_migration_interval;
    migration.retry_interval = options.storage_migration_retry_interval;
    migration.events = built->event_recorder();
    migration.registry = registry;
    migration.metrics_prefix = "myoperator_storage_migration";
    migration.clock = built->clock();
    // Sharded replicas all run it: the owner of shard slot 0 alone writes. A leader writes while its
    // Lease is fresh.
    if (built->shard_gate()) migration.write_permit = runtime::shard_slot_permit(built->shard_gate(), 0);
    if (leader_elector) migration.write_permit = runtime::leader_permit(leader_elector);
    built->add_runnable(std::make_shared<runtime::StorageVersionMigrator>(migration));
  }
  built->add_webhook("/convert", [](const runtime::HttpRequest& request) {
    auto answer = myresource::answer_conversion_review(request.body);
    if (!answer.failure.empty())
      spdlog::warn("conversion to {} refused: {}", answer.desired_api_version, answer.failure);
    return runtime::HttpResponse{answer.http_status, std::move(answer.content_type), std::move(answer.body)};
  });
  return built;
}

}  // namespace myop::app
