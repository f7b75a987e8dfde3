#pragma once
// Runs an operator: serves probes and metrics, serves the webhook, starts caches, waits until they are
// synced, waits for leadership, starts controllers and the runnables that need leadership; on stop
// (SIGTERM/SIGINT through SignalWatcher, lost leadership, or a runnable that failed) stops taking work,
// gives in-flight reconciles a grace period (none when leadership was lost: another replica may be
// writing already), stops the leader-only runnables, releases the lease, and stops caches and servers.
// Each of these is a Runnable in a group of runtime/manager/runnable_group.h, which starts the groups in that
// order and stops them in the reverse one; run() builds the groups and runs them. Nothing else checks
// leadership: whatever writes runs only while the manager has started it.
//
// It owns what every controller of the process shares: the informer registry (one cache per kind
// and scope), the cached writer that feeds it, and the event recorder. runtime/controller/builder.h assembles
// a controller from them.
//
// Probes, as kube-apiserver and controller-runtime serve them: a check has a name, and
// /healthz/<name> and /readyz/<name> answer for that check alone (404 for a name not registered).
// /healthz answers 200 while every health check passes, else 500 with a line per reason. The manager
// registers one per HTTP server it runs (server-probes, server-metrics, server-webhook): a server
// that can no longer serve (it stopped listening, a serving thread ended) makes the process not live.
// /readyz answers 200 once every cache has synced, while none reports a problem (a list and watch
// that keep failing, runtime/cache/watch_health.h) and every ready check passes; else 503 with a line per
// reason. Each cache is a ready check of its own name. With the webhook server, the ready check
// `webhook` passes while it listens and serves a valid certificate (loaded, not expired), whatever the
// caches: /readyz/webhook is what a pod that serves conversions is ready by, and with no cache to
// sync (--webhook-only) /readyz means the same.
// /metrics serves the registry in the Prometheus text format, over HTTPS with metrics_secure
// (a certificate from metrics_cert_dir, reloaded when its files change, or a self-signed one made
// at start), and only to scrapers the metrics_authorizer allows. Probes stay plain HTTP.
#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/client.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/certificates/cert_watcher.h"
#include "runtime/certificates/webhook_certificates.h"
#include "runtime/clock.h"
#include "runtime/controller/controller.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/controller/writer.h"
#include "runtime/election/leader_elector.h"
#include "runtime/fleet/cluster_context.h"
#include "runtime/fleet/fleet.h"
#include "runtime/http/http_server.h"
#include "runtime/http/metrics_authorizer.h"
#include "runtime/manager/runnable.h"
#include "runtime/manager/runnable_group.h"
#include "runtime/sharding/shard_coordinator.h"
#include "runtime/sharding/shard_gate.h"
#include "trace/tracer.h"

namespace myop::runtime {

struct ManagerOptions {
  // The API client of the shared caches, the cached writer and the event recorder. Null: a manager
  // of runnables and controllers only (informers(), writer() and event_recorder() then refuse).
  std::shared_ptr<kube::Client> client;
  // Field manager of the cached writer's applies and patches (names the operator in managedFields).
  std::string field_manager;
  // Namespaces the caches watch unless a controller asks otherwise (empty: all namespaces).
  std::vector<std::string> namespaces;
  InformerRegistryOptions informers{};
  // reporting_controller must be set when event_recorder() is used.
  EventRecorderOptions events{};
  // "0" or "" disables a server.
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  Duration graceful_shutdown_timeout = std::chrono::seconds(30);
  Duration cache_sync_timeout = std::chrono::minutes(2);
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  // Null: no leader election, controllers start as soon as caches are synced.
  std::shared_ptr<LeaderElector> leader_elector;
  // Set (with a client, without a leader elector): several active replicas share the work by shard
  // slot (runtime/sharding/shard_coordinator.h). Controllers' primary and owned kinds are cached per slot,
  // and every reconcile runs under the slot's ticket. Losing membership stops the manager like losing
  // leadership does.
  std::optional<ShardingOptions> sharding;
  // Null: /metrics is open (bind it to localhost or protect it with a NetworkPolicy). Set: every
  // scrape needs a bearer token allowed `get` on /metrics (TokenReview + SubjectAccessReview).
  std::shared_ptr<MetricsAuthorizer> metrics_authorizer;
  // HTTPS for /metrics (--metrics-secure). With a cert dir, <dir>/<cert name> and <dir>/<key name>
  // are served and polled for changes; without one, a self-signed certificate is made in memory.
  bool metrics_secure = false;
  std::string metrics_cert_dir;
  std::string metrics_cert_name = "tls.crt";
  std::string metrics_key_name = "tls.key";
  std::chrono::milliseconds metrics_cert_poll_interval = std::chrono::seconds(5);
  // The conversion webhook server (HTTPS, POST paths added with add_webhook): "0" or "" disables it.
  // Its certificate: <webhook_cert_dir>/tls.crt and tls.key, reloaded when they change, or else the
  // self-managed webhook_certificates, started first. Either way the webhook is served before the
  // caches start (their lists may need the conversion) and until the end.
  std::string webhook_bind_address = "0";
  std::string webhook_cert_dir;
  std::shared_ptr<WebhookCertificateManager> webhook_certificates;
  // What each server lets its clients hold (runtime/http/http_server_limits.h). The probes and /metrics
  // take GETs only; the webhook takes POST bodies up to max_post_body (the API server sends a list's
  // objects in one ConversionReview: 500 MyResources are about 1 MiB) and buffers four such at once;
  // one client (a pod) gets at most half of its connections, the API servers the rest.
  HttpServerLimits probe_server_limits{
      .max_connections = 64, .max_connections_per_client = 16, .max_buffered_bytes = 1 * kMiB, .threads = 2};
  HttpServerLimits metrics_server_limits{
      .max_connections = 64, .max_connections_per_client = 16, .max_buffered_bytes = 1 * kMiB, .threads = 2};
  HttpServerLimits webhook_server_limits{.max_connections = 256,
                                         .max_connections_per_client = 128,
                                         .max_buffered_bytes = 32 * kMiB,
                                         .max_post_body = 8 * kMiB,
                                         .threads = 4};
  // The cache sync timeout runs on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Null: tracing off. Set: every controller built on this manager traces its reconciles.
  std::shared_ptr<trace::Tracer> tracer{};
  // Set (with a client): member clusters from kubeconfig Secrets, engaged and disengaged at run time
  // (runtime/fleet/fleet.h); controllers completed with a reconciler per cluster
  // (ControllerBuilder::complete(ReconcilerFactory)) reconcile them too. Its field manager, informer
  // and event options, registry, clock and hub event recorder default to the manager's; with sharding,
  // each member is a unit of work of the shard slots, written by one replica at a time.
  std::optional<fleet::FleetOptions> fleet;
};

// A named check: passes, or fails with a text that says why.
using Check = std::function<base::Result<void, std::string>()>;

class Manager {
 public:
  explicit Manager(ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const { return options_.registry; }
  // The clock every part of the manager runs on; what runs beside it (a product's periodic work)
  // takes it too, so one fake clock drives them all in a test.
  const std::shared_ptr<const base::Clock>& clock() const { return options_.clock; }
  const std::shared_ptr<trace::Tracer>& tracer() const { return options_.tracer; }
  // More metrics to serve next to the registry (e.g. the API client's).
  void add_collectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Runnables that need leadership (needs_leader_election()) start once it is held and stop when it
  // is lost; the others (caches) start at once and must sync before anything else starts.
  void add_runnable(std::shared_ptr<Runnable> runnable);
  void add_controller(std::shared_ptr<Controller> controller);

  // The shared caches, the cached writer and the event recorder (see the top of this file).
  InformerRegistry& informers();
  Writer& writer();
  std::shared_ptr<EventRecorder> event_recorder();
  const std::vector<std::string>& namespaces() const { return options_.namespaces; }
  // The hub (the cluster of ManagerOptions::client) as a cluster like the fleet's members.
  ClusterContext hub();
  // Null without ManagerOptions::fleet.
  fleet::Fleet* fleet() { return fleet_.get(); }
  // Null unless sharding.
  const std::shared_ptr<ShardGate>& shard_gate() const { return shard_gate_; }
  ShardCoordinator* shard_coordinator() { return shard_coordinator_.get(); }
  // A POST path of the webhook server (register before run()).
  void add_webhook(const std::string& path, HttpHandler handler);
  void add_health_check(std::string name, Check check);
  void add_ready_check(std::string name, Check check);

  // Blocks until `stop` is requested, leadership is lost or a runnable fails, then shuts down.
  // Returns the exit code: 0 after a requested stop, 1 when start-up failed, a runnable failed,
  // leadership was lost or reconciles were still running at the end of the grace period. Once.
  int run(std::stop_token stop);

  bool caches_synced() const { return groups_.ready(RunnableGroup::caches); }
  std::uint16_t metrics_port() const { return metrics_server_.port(); }
  std::uint16_t probe_port() const { return probe_server_.port(); }
  std::uint16_t webhook_port() const { return webhook_server_.port(); }

 private:
  // /healthz and /readyz, or /healthz/<check> and /readyz/<check> (the request's path says which).
  HttpResponse healthz(const HttpRequest& request);
  HttpResponse readyz(const HttpRequest& request);
  // The checks behind /readyz: each cache by its name, then those added.
  std::vector<std::pair<std::string, Check>> ready_checks();
  // Serving with a valid certificate; else why not.
  base::Result<void, std::string> webhook_readiness();
  // Exports the metrics and registers the checks of the servers run() starts.
  void prepare_servers();
  HttpResponse metrics(const HttpRequest& request);
  // The metrics server's self-signed TLS certificate (metrics_secure without metrics_cert_dir, whose
  // files a CertificateWatcher of the servers group loads instead); an error text when it cannot be made.
  base::Result<void, std::string> prepare_metrics_tls();
  // Adds the servers, their certificates, the caches, the controllers, the leader-only runnables and
  // the shard coordinator to groups_; an error text when the webhook has no certificate to serve.
  base::Result<void, std::string> build_groups();
  // Adds the webhook's certificate source and the webhook server to groups_; an error text when it
  // has no certificate source.
  base::Result<void, std::string> serve_webhooks();
  // Serves `server` with the pair `certificate_name`, `key_name` in `folder`, reloaded by a
  // CertificateWatcher that runs in `group` (named "<server> certificate files").
  void serve_certificate_files(HttpServer& server, RunnableGroup group, const std::string& folder,
                               const std::string& certificate_name, const std::string& key_name);
  // Controllers stop with the grace period, or at once after a Lease was lost.
  Duration grace() const;

  ManagerOptions options_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::shared_ptr<InformerRegistry> informers_;
  std::shared_ptr<Writer> writer_;
  std::mutex recorder_mutex_;
  std::shared_ptr<EventRecorder> recorder_;
  std::vector<std::shared_ptr<Runnable>> runnables_;
  std::vector<std::shared_ptr<Runnable>> leader_runnables_;
  std::vector<std::shared_ptr<Controller>> controllers_;
  std::mutex checks_mutex_;
  std::vector<std::pair<std::string, Check>> health_checks_;
  std::vector<std::pair<std::string, Check>> ready_checks_;
  HttpServer metrics_server_{"metrics"};
  HttpServer probe_server_{"probes"};
  HttpServer webhook_server_{"webhook"};
  std::vector<std::shared_ptr<CertificateWatcher>> certificate_watchers_;
  std::shared_ptr<ShardGate> shard_gate_;
  std::unique_ptr<ShardCoordinator> shard_coordinator_;
  std::shared_ptr<fleet::Fleet> fleet_;
  bool servers_prepared_ = false;
  RunnableGroups groups_;
  // Whether every controller stopped within its grace period (set once run() has stopped them).
  std::shared_ptr<std::atomic<bool>> controllers_clean_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace myop::runtime
