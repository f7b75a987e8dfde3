#pragma once
// The operator's command line: every flag, its default, and its MYOP_* environment variable
// (MYOP_<FLAG_IN_UPPER_SNAKE_CASE>), parsed and validated into Options. docs/design.md lists them.
#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace myop::app {

struct Options {
  std::string kubeconfig;
  std::string context;
  std::vector<std::string> namespaces;  // empty: all namespaces
  std::string namespaces_flag;          // as given, for the start-up log
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  bool metrics_secure = false;
  std::string metrics_cert_dir;
  std::string metrics_cert_name = "tls.crt";
  std::string metrics_key_name = "tls.key";
  bool leader_elect = false;
  std::string leader_election_namespace;
  std::string leader_election_id = "my-operator.myorg.io";
  // Several active replicas, each working on the shard slots (namespaces' hashes) it owns; the
  // Leases (<shard-group>-member-*, <shard-group>-slot-NN) live in the leader-election namespace.
  bool sharding = false;
  std::string shard_group = "my-operator";
  // Member clusters from kubeconfig Secrets in the operator's namespace (multicluster-runtime's label
  // sigs.k8s.io/multicluster-runtime-kubeconfig, key `kubeconfig`), engaged and disengaged as the
  // Secrets come and go (docs/multicluster.md).
  bool fleet_kubeconfig_secrets = false;
  // Member clusters from ClusterProfiles (multicluster.x-k8s.io) of `fleet_cluster_profile_namespace`
  // (default: the operator's), with credentials from the access providers of this file
  // (cluster-inventory-api's provider file format); empty: none.
  std::string fleet_cluster_profile_providers;
  std::string fleet_cluster_profile_namespace;
  int max_concurrent_reconciles = 4;
  // No client-side rate limit by default: the API server's Priority and Fairness limits clients,
  // and its 429 + Retry-After is honoured.
  double qps = 0;
  int burst = 100;
  // How reads (list, watch, get) of built-in kinds travel: "protobuf" (the default; JSON where the
  // server answers JSON) or "json". Writes and custom resources are JSON either way.
  std::string wire_format = "protobuf";
  // How reads of custom resources (MyResources) travel: "cbor" (the default; JSON where the API server
  // has no CBORServingAndStorage gate) or "json".
  std::string custom_resource_wire_format = "cbor";
  std::chrono::seconds resync_period = std::chrono::hours(10);
  std::chrono::seconds orphan_sweep_period = std::chrono::minutes(5);
  // A child Deployment in foreground deletion this much longer than its pods' grace period is deleted
  // again in background (the garbage collector missed it; myresource/reconciler.h).
  std::chrono::seconds stuck_deletion_timeout = std::chrono::seconds(60);
  // A watch silent this long (no event, no bookmark) is taken as stalled and reconnected; above the API
  // server's one-minute bookmark interval (kube/watch.h).
  std::chrono::seconds watch_stall_timeout = std::chrono::seconds(90);
  // The conversion webhook (HTTPS, POST /convert): "0" disables it. Its certificate is read from
  // webhook_cert_dir (tls.crt, tls.key; cert-manager or a mounted Secret, reloaded when it changes),
  // else managed by the operator in the Secret webhook_secret of the operator's namespace: a CA and a
  // serving certificate for <webhook_service>.<namespace>.svc[.cluster.local] and webhook_cert_names,
  // renewed at a third of their validity, the CA put in the caBundle of webhook_crds.
  std::string webhook_bind_address = "0";
  // Serve only the conversion webhook and the health probes: no controller, no leader election, no
  // storage migration, no MyResource access (a webhook Deployment of its own, or a test control plane's).
  bool webhook_only = false;
  std::string webhook_cert_dir;
  std::string webhook_secret = "my-operator-webhook-cert";
  // The Secret of the self-managed CA's key, apart from the serving Secret; empty: <webhook_secret>-ca.
  std::string webhook_ca_secret;
  std::string webhook_service = "my-operator-webhook";
  std::vector<std::string> webhook_cert_names;  // more names (a URL's host, e.g. 127.0.0.1)
  std::string webhook_cert_names_flag;
  // Rewrites MyResources stored in an older version into the CRD's storage version and trims its
  // status.storedVersions (runtime/migration/storage_migration.h), while leading; only when watching every
  // namespace (a namespaced operator cannot list them all).
  bool migrate_storage = true;
  double storage_migration_qps = 20;
  // How often the CRD is read for a new storage version, and how soon a pass that was interrupted or
  // left objects refused by the API server is tried again.
  std::chrono::seconds storage_migration_interval = std::chrono::minutes(10);
  std::chrono::seconds storage_migration_retry_interval = std::chrono::seconds(30);
  std::vector<std::string> webhook_crds{"myresources.myorg.io"};
  std::string webhook_crds_flag = "myresources.myorg.io";
  std::chrono::seconds webhook_cert_validity = std::chrono::hours(24 * 365);
  std::chrono::seconds webhook_ca_validity = std::chrono::hours(24 * 365 * 10);
  // The largest ConversionReview the webhook reads (413 beyond); it buffers four such at once.
  std::uint64_t webhook_max_request_bytes = 8ULL << 20U;
  // How often the self-managed certificates and the CRDs' caBundle are checked (at most a tenth of
  // webhook_cert_validity).
  std::chrono::seconds webhook_cert_check_interval = std::chrono::minutes(1);
  std::string config_map = "my-operator-config";
  // OTLP/HTTP collector, e.g. http://otel-collector:4318; empty: tracing off (no spans, no exporter).
  std::string otlp_endpoint;
  // Share of reconcile traces recorded, decided on the trace id (OpenTelemetry's TraceIdRatioBased).
  // 1 as the OpenTelemetry SDKs' default sampler: tracing is opt-in through the endpoint, one trace
  // per reconcile is a few spans, and the bounded queue drops rather than slows when it is too many.
  double trace_sampling_ratio = 1.0;
  std::string log_level = "info";
  std::string log_format = "json";

  bool operator==(const Options&) const = default;
};

// Options, or the exit code to return at once (--help, --version, a bad flag: CLI11 has printed why).
std::variant<Options, int> parse_options(int argc, char** argv);

// One flag as parse_options registers it and --help prints it.
struct FlagDescription {
  std::string name;           // "--metrics-bind-address"
  std::string environment;    // "MYOP_METRICS_BIND_ADDRESS"; empty for --help and --version
  std::string default_value;  // as --help shows it; empty when it shows none
  std::string help;
};

// Every flag parse_options accepts, in --help's order, from the same definitions the parser uses:
// test/unit/docs/design_flags_test.cpp checks docs/design.md's flags table against it.
std::vector<FlagDescription> describe_flags();

// "10h", "30m", "45s", "1h30m" -> seconds; std::invalid_argument naming the problem otherwise.
std::chrono::seconds parse_duration(const std::string& text);

// "a, b,,a" -> {"a", "b"}: trimmed, empty and repeated entries dropped.
std::vector<std::string> split_namespaces(const std::string& list);

// "metrics-bind-address" -> "MYOP_METRICS_BIND_ADDRESS".
std::string environment_name(const std::string& flag);

}  // namespace myop::app
