#include "runtime/manager/manager.h"

#include <prometheus/text_serializer.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "runtime/certificates/tls_certificate.h"
#include "runtime/http/http_server_runnable.h"
#include "runtime/logging.h"

namespace myop::runtime {

namespace {

bool disabled(const std::string& bind_address) { return bind_address.empty() || bind_address == "0"; }

// The controllers, as one runnable of the leader-only group: they start together, and stop in
// parallel, so that they share one grace period (`grace` says how long, when they stop).
class Controllers final : public Runnable {
 public:
  Controllers(std::vector<std::shared_ptr<Controller>> controllers, std::function<Duration()> grace,
              std::shared_ptr<std::atomic<bool>> clean)
      : controllers_(std::move(controllers)), grace_(std::move(grace)), clean_(std::move(clean)) {}
  std::string name() const override { return "controllers"; }
  void start() override {
    for (const auto& controller : controllers_) controller->start();
  }
  void stop() override {
    const Duration grace = grace_();
    log(spdlog::level::info, "Stopping controllers",
        {{"gracePeriodSeconds", std::to_string(to_seconds(grace))}});
    std::vector<std::future<bool>> stopped;
    stopped.reserve(controllers_.size());
    for (const auto& controller : controllers_) {
      stopped.push_back(
          std::async(std::launch::async, [controller, grace] { return controller->stop(grace); }));
    }
    bool clean = true;
    for (auto& result : stopped) clean = result.get() && clean;
    *clean_ = clean;
  }
  bool has_synced() const override { return true; }
  void on_synced(std::function<void()> callback) override { callback(); }

 private:
  std::vector<std::shared_ptr<Controller>> controllers_;
  std::function<Duration()> grace_;
  std::shared_ptr<std::atomic<bool>> clean_;
};

// This replica's membership of the shard group, last of the leader-only group: it joins once the
// controllers run, and on stop drains and frees every slot first, so the others take them over at
// once. Losing it is a lost Lease (the manager's on_lost says so to the groups).
class ShardMembership final : public Runnable {
 public:
  ShardMembership(ShardCoordinator& coordinator, std::stop_token stopping, std::function<Duration()> grace)
      : coordinator_(coordinator), stopping_(std::move(stopping)), grace_(std::move(grace)) {}
  std::string name() const override { return "shard coordinator"; }
  // Blocks until the member Lease is written, or the groups stop.
  void start() override {
    joined_ = coordinator_.start(stopping_);
    if (!joined_ && !stopping_.stop_requested() && failed_) failed_("cannot join the shard group");
  }
  void stop() override { coordinator_.stop(grace_()); }
  bool has_synced() const override { return joined_; }
  void on_synced(std::function<void()> callback) override {
    if (joined_) callback();
  }
  void on_failed(const std::function<void(std::string)>& callback) override { failed_ = callback; }

 private:
  ShardCoordinator& coordinator_;
  std::stop_token stopping_;
  std::function<Duration()> grace_;
  std::function<void(std::string)> failed_;
  std::atomic<bool> joined_{false};
};

}  // namespace

Manager::Manager(ManagerOptions options)
    : options_(std::move(options)),
      groups_({.leader_elector = options_.leader_elector,
               .ready_timeout = options_.cache_sync_timeout,
               .clock = options_.clock}) {
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
  if (options_.fleet) {
    if (!options_.client) throw std::invalid_argument("ManagerOptions: a fleet needs a client");
    fleet::FleetOptions fleet = *options_.fleet;
    if (fleet.field_manager.empty()) fleet.field_manager = options_.field_manager;
    if (!fleet.registry) fleet.registry = options_.registry;
    fleet.clock = options_.clock;
    fleet.informer = options_.informers.informer;
    if (fleet.events.reporting_controller.empty()) fleet.events = options_.events;
    if (!fleet.events.registry) fleet.events.registry = options_.registry;
    fleet.shard_gate = shard_gate_;
    if (!fleet.hub_events && !options_.events.reporting_controller.empty())
      fleet.hub_events = event_recorder();
    fleet_ = std::make_shared<fleet::Fleet>(*informers_, std::move(fleet));
    runnables_.push_back(fleet_);
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
  for (const auto& watcher : certificate_watchers_) watcher->stop();
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
ClusterContext Manager::hub() {
  ClusterContext hub;
  hub.client = options_.client;
  hub.informers = informers_;
  hub.writer = writer_;
  if (!options_.events.reporting_controller.empty()) hub.recorder = event_recorder();
  return hub;
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
  return run_checks(ready_checks(), only, 503, only.empty() && !caches_synced() ? "caches not synced\n" : "");
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
  // As controller-runtime does without a cert dir: a certificate nobody can verify, but the
  // bearer token still travels encrypted. Scrapers must skip verification (or pin it).
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') names.insert(names.begin(), host);
  auto pair = generate_self_signed_certificate(names, options_.field_manager);
  if (!pair) return base::fail("cannot make a self-signed certificate: " + pair.error().message);
  auto context = make_server_tls_context(*pair);
  if (!context) return base::fail("cannot use the self-signed certificate: " + context.error().message);
  log_served_certificate(
      "Serving metrics with a self-signed certificate made in memory (set --metrics-cert-dir "
      "to serve a verifiable one)",
      "self-signed", inspect_certificate_pair(*pair).value());
  log(spdlog::level::info, "Self-signed metrics certificate", {{"pem", pair->certificate_pem}});
  metrics_server_.serve_tls(std::make_shared<FixedTlsContextProvider>(std::move(context).value()));
  return {};
}

void Manager::add_webhook(const std::string& path, HttpHandler handler) {
  webhook_server_.handle_post(path, std::move(handler));
}

void Manager::serve_certificate_files(HttpServer& server, RunnableGroup group, const std::string& folder,
                                      const std::string& certificate_name, const std::string& key_name) {
  const std::filesystem::path path(folder);
  auto watcher = std::make_shared<CertificateWatcher>(
      (path / certificate_name).string(), (path / key_name).string(), options_.metrics_cert_poll_interval,
      options_.clock, server.name() + " certificate files");
  groups_.add(group, watcher);
  server.serve_tls(watcher);
  certificate_watchers_.push_back(std::move(watcher));
}

base::Result<void, std::string> Manager::serve_webhooks() {
  if (!options_.webhook_cert_dir.empty()) {
    serve_certificate_files(webhook_server_, RunnableGroup::webhook_certificates, options_.webhook_cert_dir,
                            "tls.crt", "tls.key");
  } else if (options_.webhook_certificates) {
    // Synced once it has a certificate to serve: the server starts only then.
    groups_.add(RunnableGroup::webhook_certificates, options_.webhook_certificates);
    webhook_server_.serve_tls(options_.webhook_certificates);
  } else {
    return base::fail("no certificate for the webhook server (neither a folder nor a Secret)");
  }
  groups_.add(RunnableGroup::webhooks,
              std::make_shared<HttpServerRunnable>(webhook_server_, options_.webhook_bind_address));
  return {};
}

Duration Manager::grace() const {
  // Lost leadership: another replica may already be writing, so cancel in-flight work at once.
  return groups_.lease_lost() ? Duration::zero() : options_.graceful_shutdown_timeout;
}

base::Result<void, std::string> Manager::build_groups() {
  prepare_servers();
  if (!disabled(options_.health_probe_bind_address)) {
    groups_.add(RunnableGroup::servers,
                std::make_shared<HttpServerRunnable>(probe_server_, options_.health_probe_bind_address));
  }
  if (!disabled(options_.metrics_bind_address)) {
    HttpServerRunnable::Prepare prepare;
    if (options_.metrics_secure && !options_.metrics_authorizer) {
      log(spdlog::level::warn,
          "Metrics are served over HTTPS without authorization: anyone reaching the port reads them", {});
    }
    if (options_.metrics_secure && options_.metrics_cert_dir.empty()) {
      prepare = [this] { return prepare_metrics_tls(); };
    } else if (options_.metrics_secure) {
      serve_certificate_files(metrics_server_, RunnableGroup::servers, options_.metrics_cert_dir,
                              options_.metrics_cert_name, options_.metrics_key_name);
    }
    groups_.add(RunnableGroup::servers,
                std::make_shared<HttpServerRunnable>(metrics_server_, options_.metrics_bind_address,
                                                     std::move(prepare)));
  }
  if (!disabled(options_.webhook_bind_address)) {
    if (auto served = serve_webhooks(); !served) return served;
  }
  for (const auto& runnable : runnables_) groups_.add(RunnableGroup::caches, runnable);
  const auto grace = [this] { return this->grace(); };
  groups_.add(RunnableGroup::leader_only,
              std::make_shared<Controllers>(controllers_, grace, controllers_clean_));
  for (const auto& runnable : leader_runnables_) groups_.add(RunnableGroup::leader_only, runnable);
  if (shard_coordinator_) {
    shard_coordinator_->on_lost([this] {
      log(spdlog::level::err, "Shard membership lost, stopping", {});
      groups_.lose_lease("shard coordinator", "shard membership lost");
    });
    groups_.add(RunnableGroup::leader_only,
                std::make_shared<ShardMembership>(*shard_coordinator_, groups_.stopping(), grace));
  }
  return {};
}

int Manager::run(std::stop_token stop) {
  if (auto built = build_groups(); !built) {
    log(spdlog::level::err, "Cannot run", {{"error", built.error()}});
    return 1;
  }
  const auto failure = groups_.run(std::move(stop));
  const bool clean = *controllers_clean_;
  log(spdlog::level::info, "Stopped", {{"clean", clean ? "true" : "false"}});
  if (failure) {
    log(spdlog::level::err, "Stopped on a failure",
        {{"runnable", failure->runnable}, {"error", failure->error}});
    return 1;
  }
  return clean ? 0 : 1;
}

}  // namespace myop::runtime
