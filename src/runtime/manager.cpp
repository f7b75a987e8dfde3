#include "runtime/manager.h"

#include <prometheus/text_serializer.h>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <thread>

#include "runtime/logging.h"
#include "runtime/tls_certificate.h"

namespace myop::runtime {

namespace {

bool disabled(const std::string& bind_address) { return bind_address.empty() || bind_address == "0"; }

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

void log_certificate(const std::string& message, const std::string& source,
                     const CertificateDescription& certificate) {
  log(certificate.expired ? spdlog::level::warn : spdlog::level::info, message,
      {{"source", source},
       {"subject", certificate.subject},
       {"serial", certificate.serial},
       {"names", joined(certificate.names)},
       {"notAfter", certificate.not_after},
       {"sha256", certificate.sha256_fingerprint},
       {"expired", certificate.expired ? "true" : "false"}});
}

}  // namespace

Manager::Manager(ManagerOptions options) : options_(std::move(options)) {
  if (!options_.registry) options_.registry = std::make_shared<prometheus::Registry>();
  if (!options_.clock) options_.clock = base::system_clock();
  if (options_.client) {
    if (!options_.informers.registry) options_.informers.registry = options_.registry;
    informers_ = std::make_shared<InformerRegistry>(options_.client, options_.informers);
    writer_ = std::make_shared<Writer>(options_.client, informers_, options_.field_manager);
    runnables_.push_back(informers_);
  }
  if (options_.sharding) {
    if (!options_.client || options_.leader_elector) {
      throw std::invalid_argument("ManagerOptions: sharding needs a client and no leader elector");
    }
    if (!options_.namespaces.empty()) {
      throw std::invalid_argument(
          "ManagerOptions: sharding needs every namespace watched (shards are namespaces)");
    }
    if (!options_.sharding->registry) options_.sharding->registry = options_.registry;
    if (!options_.sharding->clock) options_.sharding->clock = options_.clock;
    shard_gate_ = std::make_shared<ShardGate>(kShardSlots, options_.clock);
    // Every write of a namespaced object goes out only while its slot is ours and our membership fresh.
    writer_->set_fence(shard_fence(shard_gate_));
    shard_coordinator_ =
        std::make_unique<ShardCoordinator>(options_.client, *informers_, shard_gate_, *options_.sharding);
  }
  metrics_server_.handle("/metrics", [this](const HttpRequest& request) { return metrics(request); });
  for (const char* path : {"/healthz", "/healthz/"})
    probe_server_.handle(path, [this](const HttpRequest& request) { return healthz(request); });
  for (const char* path : {"/readyz", "/readyz/"})
    probe_server_.handle(path, [this](const HttpRequest& request) { return readyz(request); });
  probe_server_.limits(options_.probe_server_limits);
  metrics_server_.limits(options_.metrics_server_limits);
  webhook_server_.limits(options_.webhook_server_limits);
}

Manager::~Manager() {
  probe_server_.stop();  // first: its checks ask the other servers
  metrics_server_.stop();
  webhook_server_.stop();
  if (certificate_watcher_) certificate_watcher_->stop();
}

void Manager::add_collectable(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}
void Manager::add_runnable(std::shared_ptr<Runnable> runnable) {
  (runnable->needs_leader_election() ? leader_runnables_ : runnables_).push_back(std::move(runnable));
}

InformerRegistry& Manager::informers() {
  if (!informers_) throw std::logic_error("Manager::informers() needs ManagerOptions::client");
  return *informers_;
}

Writer& Manager::writer() {
  if (!writer_) throw std::logic_error("Manager::writer() needs ManagerOptions::client");
  return *writer_;
}

std::shared_ptr<EventRecorder> Manager::event_recorder() {
  if (!options_.client) throw std::logic_error("Manager::event_recorder() needs ManagerOptions::client");
  std::lock_guard lock(recorder_mutex_);
  if (!recorder_) {
    EventRecorderOptions events = options_.events;
    if (!events.registry) events.registry = options_.registry;
    recorder_ = std::make_shared<EventRecorder>(options_.client, std::move(events));
  }
  return recorder_;
}
void Manager::add_controller(std::shared_ptr<Controller> controller) {
  controllers_.push_back(std::move(controller));
}
void Manager::add_health_check(std::string name, Check check) {
  std::lock_guard lock(checks_mutex_);
  health_checks_.emplace_back(std::move(name), std::move(check));
}
void Manager::add_ready_check(std::string name, Check check) {
  std::lock_guard lock(checks_mutex_);
  ready_checks_.emplace_back(std::move(name), std::move(check));
}

namespace {

constexpr const char* kPlainText = "text/plain; charset=utf-8";

// "a\nb" of check `name` -> "name: a\nname: b\n".
std::string failure_lines(const std::string& name, const std::string& failure) {
  std::string lines;
  std::size_t start = 0;
  while (start <= failure.size()) {
    const auto end = failure.find('\n', start);
    const std::string line =
        failure.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty()) lines.append(name).append(": ").append(line).append("\n");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines.empty() ? name + ": failed\n" : lines;
}

// The check named by a sub-path ("/readyz/webhook" under "/readyz/": "webhook"); "" for the whole.
std::string check_name(const std::string& path, std::string_view root) {
  return path.size() > root.size() ? path.substr(root.size()) : std::string();
}

// Runs `checks` (only the one named `only`, unless empty): 200 "ok" when all pass, else `failed` with
// a line per reason; 404 when `only` names no check.
HttpResponse run_checks(const std::vector<std::pair<std::string, Check>>& checks, const std::string& only,
                        unsigned failed, std::string extra_failure = {}) {
  std::string failures;
  bool found = only.empty();
  for (const auto& [name, check] : checks) {
    if (!only.empty() && name != only) continue;
    found = true;
    if (auto checked = check(); !checked) failures += failure_lines(name, checked.error());
  }
  if (!found) return {404, kPlainText, "no check named \"" + only + "\"\n"};
  if (failures.empty()) failures = std::move(extra_failure);
  if (!failures.empty()) return {failed, kPlainText, failures};
  return {200, kPlainText, "ok"};
}

}  // namespace

HttpResponse Manager::healthz(const HttpRequest& request) {
  std::vector<std::pair<std::string, Check>> checks;
  {
    std::lock_guard lock(checks_mutex_);
    checks = health_checks_;
  }
  return run_checks(checks, check_name(request.path, "/healthz/"), 500);
}

std::vector<std::pair<std::string, Check>> Manager::ready_checks() {
  std::vector<std::pair<std::string, Check>> checks;
  for (const auto& runnable : runnables_) {
    checks.emplace_back(runnable->name(), [runnable]() -> base::Result<void, std::string> {
      std::string failure = runnable->has_synced() ? "" : "not synced";
      // A cache that synced once but can no longer list or watch is stale: not ready either.
      for (const auto& problem : runnable->problems()) failure += (failure.empty() ? "" : "\n") + problem;
      if (failure.empty()) return {};
      return base::fail(std::move(failure));
    });
  }
  std::lock_guard lock(checks_mutex_);
  checks.insert(checks.end(), ready_checks_.begin(), ready_checks_.end());
  return checks;
}

HttpResponse Manager::readyz(const HttpRequest& request) {
  const std::string only = check_name(request.path, "/readyz/");
  // The whole is ready only once the manager has seen every cache synced and moved on.
  return run_checks(ready_checks(), only, 503, only.empty() && !caches_synced_ ? "caches not synced\n" : "");
}

base::Result<void, std::string> Manager::webhook_readiness() {
  if (!webhook_server_.serving()) {
    auto health = webhook_server_.health();
    return base::fail(health ? std::string("not serving yet") : std::move(health).error());
  }
  const auto& provider = webhook_server_.tls();
  auto context = provider ? provider->tls_context() : nullptr;
  if (!context) return base::fail("no certificate to serve");
  auto served = describe_served_certificate(*context);
  if (!served) return base::fail(served.error().message);
  if (served->expired) return base::fail("its certificate expired (notAfter " + served->not_after + ")");
  if (options_.clock->wall_now() < served->valid_from) return base::fail("its certificate is not valid yet");
  return {};
}

void Manager::prepare_servers() {
  if (servers_prepared_) return;
  servers_prepared_ = true;
  const auto alive = [](HttpServer& server) { return [&server] { return server.health(); }; };
  for (auto [server, address] : {std::pair{&probe_server_, &options_.health_probe_bind_address},
                                 {&metrics_server_, &options_.metrics_bind_address},
                                 {&webhook_server_, &options_.webhook_bind_address}}) {
    if (disabled(*address)) continue;
    server->export_metrics(*options_.registry);
    add_health_check("server-" + server->name(), alive(*server));
  }
  if (!disabled(options_.webhook_bind_address)) {
    add_ready_check("webhook", [this] { return webhook_readiness(); });
  }
}

HttpResponse Manager::metrics(const HttpRequest& request) {
  if (options_.metrics_authorizer) {
    auto authorization = options_.metrics_authorizer->authorize(
        request.authorization, non_resource_verb(request.method), request.path);
    if (authorization.decision == ScrapeDecision::Unavailable) {
      log(spdlog::level::err, "Cannot authorize a metrics scrape", {{"error", authorization.message}});
    }
    if (authorization.decision != ScrapeDecision::Allowed) {
      return {static_cast<unsigned>(authorization.http_status), "text/plain; charset=utf-8",
              authorization.message + "\n"};
    }
  }
  auto families = options_.registry->Collect();
  for (const auto& collectable : collectables_) {
    auto more = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return {200, "text/plain; version=0.0.4; charset=utf-8", prometheus::TextSerializer().Serialize(families)};
}

base::Result<void, std::string> Manager::prepare_metrics_tls() {
  if (options_.metrics_cert_dir.empty()) {
    // As controller-runtime does without a cert dir: a certificate nobody can verify, but the
    // bearer token still travels encrypted. Scrapers must skip verification (or pin it).
    std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') names.insert(names.begin(), host);
    auto pair = generate_self_signed_certificate(names, options_.field_manager);
    if (!pair) return base::fail("cannot make a self-signed certificate: " + pair.error().message);
    auto context = make_server_tls_context(*pair);
    if (!context) return base::fail("cannot use the self-signed certificate: " + context.error().message);
    log_certificate(
        "Serving metrics with a self-signed certificate made in memory (set --metrics-cert-dir "
        "to serve a verifiable one)",
        "self-signed", inspect_certificate_pair(*pair).value());
    log(spdlog::level::info, "Self-signed metrics certificate", {{"pem", pair->certificate_pem}});
    metrics_server_.serve_tls(std::make_shared<FixedTlsContextProvider>(std::move(context).value()));
    return {};
  }
  const std::filesystem::path folder(options_.metrics_cert_dir);
  const std::string certificate = (folder / options_.metrics_cert_name).string();
  const std::string key = (folder / options_.metrics_key_name).string();
  auto watcher = std::make_shared<CertificateWatcher>(certificate, key, options_.metrics_cert_poll_interval,
                                                      options_.clock);
  auto loaded = watcher->load();
  if (!loaded) return base::fail("--metrics-cert-dir: " + loaded.error().message);
  log_certificate(
      "Serving metrics with the certificate of --metrics-cert-dir, reloaded when its files change",
      certificate, *loaded);
  watcher->start();
  certificate_watcher_ = watcher;
  metrics_server_.serve_tls(std::move(watcher));
  return {};
}

bool Manager::wait_for_caches(std::stop_token stop) {
  // Shared with the callbacks: a runnable may sync after this wait has given up.
  struct SyncSignal {
    std::mutex mutex;
    std::condition_variable_any synced;
  };
  auto signal = std::make_shared<SyncSignal>();
  for (const auto& runnable : runnables_) {
    runnable->on_synced([signal] {
      std::lock_guard lock(signal->mutex);
      signal->synced.notify_all();
    });
  }
  const auto all_synced = [this] {
    return std::all_of(runnables_.begin(), runnables_.end(),
                       [](const auto& runnable) { return runnable->has_synced(); });
  };
  std::unique_lock lock(signal->mutex);
  const bool synced =
      options_.clock->wait_for(signal->synced, lock, stop, options_.cache_sync_timeout, all_synced);
  if (stop.stop_requested()) return false;
  if (synced) return true;
  for (const auto& runnable : runnables_) {
    if (!runnable->has_synced()) {
      log(spdlog::level::err, "Timed out waiting for a cache to sync", {{"cache", runnable->name()}});
    }
  }
  return false;
}

void Manager::add_webhook(const std::string& path, HttpHandler handler) {
  webhook_server_.handle_post(path, std::move(handler));
}

base::Result<void, std::string> Manager::serve_webhooks(const std::stop_token& stop) {
  if (!options_.webhook_cert_dir.empty()) {
    const std::filesystem::path folder(options_.webhook_cert_dir);
    auto watcher =
        std::make_shared<CertificateWatcher>((folder / "tls.crt").string(), (folder / "tls.key").string(),
                                             options_.metrics_cert_poll_interval, options_.clock);
    auto loaded = watcher->load();
    if (!loaded) return base::fail("--webhook-cert-dir: " + loaded.error().message);
    log_certificate(
        "Serving webhooks with the certificate of --webhook-cert-dir, reloaded when its files change",
        folder.string(), *loaded);
    watcher->start();
    webhook_certificate_watcher_ = watcher;
    webhook_server_.serve_tls(std::move(watcher));
    return webhook_server_.start(options_.webhook_bind_address);
  }
  if (!options_.webhook_certificates)
    return base::fail("no certificate for the webhook server (neither a folder nor a Secret)");
  if (const auto& certificates = options_.webhook_certificates) {
    log(spdlog::level::info, "Starting", {{"runnable", certificates->name()}});
    certificates->start();
    // Shared with the callback, which may come after a timeout has ended this wait.
    struct Synced {
      std::mutex mutex;
      std::condition_variable_any changed;
      bool done = false;
    };
    auto synced = std::make_shared<Synced>();
    certificates->on_synced([synced] {
      std::lock_guard lock(synced->mutex);
      synced->done = true;
      synced->changed.notify_all();
    });
    std::unique_lock lock(synced->mutex);
    if (!options_.clock->wait_for(synced->changed, lock, stop, options_.cache_sync_timeout,
                                  [&] { return synced->done; }))
      return base::fail(stop.stop_requested()
                            ? "stopped before the webhook had a certificate"
                            : "no webhook certificate within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                     options_.cache_sync_timeout)
                                                     .count()) +
                                  " s");
  }
  webhook_server_.serve_tls(options_.webhook_certificates);
  return webhook_server_.start(options_.webhook_bind_address);
}

int Manager::run(std::stop_token stop) {
  std::stop_callback forward(stop, [this] { internal_stop_.request_stop(); });
  const std::stop_token stopping = internal_stop_.get_token();
  prepare_servers();

  if (!disabled(options_.health_probe_bind_address)) {
    if (auto started = probe_server_.start(options_.health_probe_bind_address); !started) {
      log(spdlog::level::err, "Cannot serve health probes", {{"error", started.error()}});
      return 1;
    }
  }
  if (!disabled(options_.metrics_bind_address)) {
    if (options_.metrics_secure && !options_.metrics_authorizer) {
      log(spdlog::level::warn,
          "Metrics are served over HTTPS without authorization: anyone reaching the port reads them", {});
    }
    if (options_.metrics_secure) {
      if (auto prepared = prepare_metrics_tls(); !prepared) {
        log(spdlog::level::err, "Cannot serve metrics over HTTPS", {{"error", prepared.error()}});
        probe_server_.stop();
        return 1;
      }
    }
    if (auto started = metrics_server_.start(options_.metrics_bind_address); !started) {
      log(spdlog::level::err, "Cannot serve metrics", {{"error", started.error()}});
      probe_server_.stop();
      return 1;
    }
  }

  if (!disabled(options_.webhook_bind_address)) {
    if (auto serving = serve_webhooks(stopping); !serving) {
      log(spdlog::level::err, "Cannot serve webhooks", {{"error", serving.error()}});
      if (options_.webhook_certificates) options_.webhook_certificates->stop();
      if (webhook_certificate_watcher_) webhook_certificate_watcher_->stop();
      metrics_server_.stop();
      probe_server_.stop();
      return stop.stop_requested() ? 0 : 1;
    }
  }

  for (const auto& runnable : runnables_) {
    log(spdlog::level::info, "Starting cache", {{"cache", runnable->name()}});
    runnable->start();
  }
  if (!wait_for_caches(stopping)) {
    const bool requested = stop.stop_requested();
    shut_down();
    return requested ? 0 : 1;
  }
  caches_synced_ = true;
  log(spdlog::level::info, "Caches synced", {{"caches", std::to_string(runnables_.size())}});

  if (options_.leader_elector) {
    options_.leader_elector->on_lost([this] {
      log(spdlog::level::err, "Leader election lost, stopping", {});
      leadership_lost_ = true;
      internal_stop_.request_stop();
    });
    log(spdlog::level::info, "Waiting for leadership", {});
    if (!options_.leader_elector->acquire(stopping)) {
      shut_down();
      return leadership_lost_ ? 1 : 0;
    }
    log(spdlog::level::info, "Became leader, starting controllers", {});
  }
  for (const auto& controller : controllers_) controller->start();
  for (const auto& runnable : leader_runnables_) {
    log(spdlog::level::info, "Starting", {{"runnable", runnable->name()}});
    runnable->start();
  }
  if (shard_coordinator_) {
    shard_coordinator_->on_lost([this] {
      log(spdlog::level::err, "Shard membership lost, stopping", {});
      leadership_lost_ = true;
      internal_stop_.request_stop();
    });
    if (!shard_coordinator_->start(stopping)) {
      shut_down();
      return stop.stop_requested() ? 0 : 1;
    }
  }

  {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    wake.wait(lock, stopping, [] { return false; });
  }
  const bool clean = shut_down();
  if (leadership_lost_) return 1;
  return clean ? 0 : 1;
}

bool Manager::shut_down() {
  // Lost leadership: another replica may already be writing, so cancel in-flight work at once.
  const Duration grace = leadership_lost_ ? Duration::zero() : options_.graceful_shutdown_timeout;
  // Sharded: drain and free every slot first, so the other replicas take them over at once.
  if (shard_coordinator_) shard_coordinator_->stop(grace);
  log(spdlog::level::info, "Stopping controllers",
      {{"gracePeriodSeconds", std::to_string(to_seconds(grace))}});
  // Controllers stop in parallel so that they share one grace period.
  std::vector<std::future<bool>> stopped;
  for (const auto& controller : controllers_) {
    stopped.push_back(
        std::async(std::launch::async, [controller, grace] { return controller->stop(grace); }));
  }
  // Leader-only work stops next to the controllers (stop() cancels what is in flight).
  for (const auto& runnable : leader_runnables_) runnable->stop();
  bool clean = true;
  for (auto& result : stopped) clean = result.get() && clean;
  if (options_.leader_elector && !leadership_lost_) options_.leader_elector->release();
  for (const auto& runnable : runnables_) runnable->stop();
  // The webhook serves until the end: another replica's caches may still need its conversion.
  webhook_server_.stop();
  if (options_.webhook_certificates) options_.webhook_certificates->stop();
  if (webhook_certificate_watcher_) webhook_certificate_watcher_->stop();
  metrics_server_.stop();
  probe_server_.stop();
  if (certificate_watcher_) certificate_watcher_->stop();
  log(spdlog::level::info, "Stopped", {{"clean", clean ? "true" : "false"}});
  return clean;
}

}  // namespace myop::runtime
