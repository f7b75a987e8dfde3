#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "runtime/manager/manager.h"
#include "support/eventually.h"
#include "support/fake_clock.h"
#include "support/http_get.h"
#include "support/https_get.h"
#include "support/raw_http.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::runtime::testing::http_request;
using myop::testing::eventually;

namespace {

class FakeCache final : public Runnable {
 public:
  std::string name() const override { return "fake-cache"; }
  void start() override { started = true; }
  void stop() override { stopped = true; }
  bool has_synced() const override { return synced; }
  std::vector<std::string> problems() const override {
    std::lock_guard lock(mutex);
    return problem_lines;
  }
  void on_synced(std::function<void()> callback) override {
    std::unique_lock lock(mutex);
    if (!synced) {
      synced_callback = std::move(callback);
      return;
    }
    lock.unlock();
    callback();
  }
  void sync() {
    std::function<void()> callback;
    {
      std::lock_guard lock(mutex);
      synced = true;
      callback = std::move(synced_callback);
    }
    if (callback) callback();
  }
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
  std::atomic<bool> synced{false};
  mutable std::mutex mutex;
  std::function<void()> synced_callback;
  std::vector<std::string> problem_lines;
};

class FakeElector final : public LeaderElector {
 public:
  bool acquire(std::stop_token stop) override {
    std::unique_lock lock(mutex);
    changed.wait(lock, stop, [&] { return grant; });
    leading = grant && !stop.stop_requested();
    return leading;
  }
  void on_lost(std::function<void()> callback) override { lost = std::move(callback); }
  bool is_leader() const override { return leading; }
  void release() override { released = true; }
  void set_grant() {
    std::lock_guard lock(mutex);
    grant = true;
    changed.notify_all();
  }
  std::mutex mutex;
  std::condition_variable_any changed;
  bool grant = false;
  std::atomic<bool> leading{false};
  std::atomic<bool> released{false};
  std::function<void()> lost;
};

class GatedReconciler final : public Reconciler {
 public:
  ReconcileResult reconcile(const ReconcileRequest&) override {
    std::unique_lock lock(mutex);
    ++started;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    ++finished;
    return ReconcileResult::done();
  }
  void wait_started() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return started > 0; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int started = 0;
  int finished = 0;
};

ManagerOptions local_options() {
  ManagerOptions options;
  options.metrics_bind_address = "127.0.0.1:0";
  options.health_probe_bind_address = "127.0.0.1:0";
  return options;
}

}  // namespace

TEST_CASE("probes: alive at once, ready after caches sync, metrics served", "[runtime][manager]") {
  auto options = local_options();
  Manager manager(options);
  auto cache = std::make_shared<FakeCache>();
  manager.add_runnable(cache);
  ControllerOptions controller_options;
  controller_options.name = "demo";
  controller_options.registry = manager.registry();
  auto reconciler = std::make_shared<GatedReconciler>();
  reconciler->release();
  auto controller = std::make_shared<Controller>(controller_options, reconciler);
  manager.add_controller(controller);

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(
      eventually([&] { return cache->started && manager.probe_port() != 0 && manager.metrics_port() != 0; }));
  CHECK(http_request(manager.probe_port(), "/healthz").status == 200);
  auto not_ready = http_request(manager.probe_port(), "/readyz");
  CHECK(not_ready.status == 503);
  CHECK_THAT(not_ready.body, Catch::Contains("fake-cache"));

  cache->sync();
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  CHECK(http_request(manager.probe_port(), "/readyz").status == 200);

  controller->enqueue({"a", "x"});
  REQUIRE(eventually([&] { return controller->queue().depth() == 0 && controller->active_workers() == 0; }));
  auto metrics = http_request(manager.metrics_port(), "/metrics");
  CHECK(metrics.status == 200);
  CHECK_THAT(metrics.content_type, Catch::Contains("text/plain"));
  for (const char* name :
       {"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds", "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers", "workqueue_depth", "workqueue_adds_total",
        "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "workqueue_retries_total",
        "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
        "myoperator_event_to_reconcile_seconds"}) {
    INFO(name);
    CHECK_THAT(metrics.body, Catch::Contains(std::string("# TYPE ") + name));
  }
  CHECK_THAT(metrics.body, Catch::Contains("workqueue_depth{name=\"demo\",priority=\"low\"}"));

  stop.request_stop();
  CHECK(exit_code.get() == 0);
  CHECK(cache->stopped);
}

TEST_CASE("probes: a synced cache that reports a problem is not ready until it clears",
          "[runtime][manager]") {
  Manager manager(local_options());
  auto cache = std::make_shared<FakeCache>();
  manager.add_runnable(cache);
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return cache->started && manager.probe_port() != 0; }));
  cache->sync();
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  CHECK(http_request(manager.probe_port(), "/readyz").status == 200);

  {
    std::lock_guard lock(cache->mutex);
    cache->problem_lines = {
        "myresources (myresources.myorg.io in all namespaces): list and watch failing: "
        "conversion webhook for myorg.io/v1beta1, Kind=MyResource failed"};
  }
  const auto failing = http_request(manager.probe_port(), "/readyz");
  CHECK(failing.status == 503);
  CHECK_THAT(failing.body,
             Catch::StartsWith("fake-cache: myresources (myresources.myorg.io in all namespaces)"));
  CHECK_THAT(failing.body, Catch::Contains("conversion webhook for myorg.io/v1beta1"));
  CHECK(http_request(manager.probe_port(), "/healthz").status == 200);  // alive all along

  {
    std::lock_guard lock(cache->mutex);
    cache->problem_lines.clear();
  }
  CHECK(http_request(manager.probe_port(), "/readyz").status == 200);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("graceful shutdown waits for the in-flight reconcile and releases the lease",
          "[runtime][manager]") {
  auto options = local_options();
  auto elector = std::make_shared<FakeElector>();
  options.leader_elector = elector;
  Manager manager(options);
  auto cache = std::make_shared<FakeCache>();
  cache->sync();
  manager.add_runnable(cache);
  auto clock = std::make_shared<myop::testing::FakeClock>();
  ControllerOptions controller_options;
  controller_options.registry = manager.registry();
  controller_options.clock = clock;
  auto reconciler = std::make_shared<GatedReconciler>();
  auto controller = std::make_shared<Controller>(controller_options, reconciler);
  manager.add_controller(controller);
  controller->enqueue({"a", "x"});

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  // Not the leader yet: no reconcile runs.
  CHECK(reconciler->started == 0);
  elector->set_grant();
  reconciler->wait_started();

  const auto grace_ends = clock->now() + options.graceful_shutdown_timeout;
  stop.request_stop();
  // The controller waits out the grace period for the reconcile; the lease is kept meanwhile.
  REQUIRE(clock->await_deadline(grace_ends));
  CHECK(exit_code.wait_for(0s) == std::future_status::timeout);
  CHECK_FALSE(elector->released);
  reconciler->release();
  CHECK(exit_code.get() == 0);
  CHECK(reconciler->finished == 1);
  CHECK(elector->released);
}

TEST_CASE("lost leadership stops the manager with a non-zero exit code", "[runtime][manager]") {
  auto options = local_options();
  auto elector = std::make_shared<FakeElector>();
  elector->set_grant();
  options.leader_elector = elector;
  Manager manager(options);
  auto cache = std::make_shared<FakeCache>();
  cache->sync();
  manager.add_runnable(cache);
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return elector->leading.load(); }));
  elector->lost();
  CHECK(exit_code.get() == 1);
  CHECK_FALSE(elector->released);
}

TEST_CASE("the cache wait gives up at its timeout on the manager's clock", "[runtime][manager]") {
  auto options = local_options();
  auto clock = std::make_shared<myop::testing::FakeClock>();
  options.clock = clock;
  options.cache_sync_timeout = 2min;
  Manager manager(options);
  auto cache = std::make_shared<FakeCache>();
  manager.add_runnable(cache);
  std::stop_source stop;
  const auto gives_up_at = clock->now() + 2min;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  // Waiting until the timeout, not in slices: one timer, for exactly then.
  REQUIRE(clock->await_deadline(gives_up_at));
  clock->advance(2min - 1s);
  CHECK(exit_code.wait_for(0s) == std::future_status::timeout);
  CHECK_FALSE(manager.caches_synced());
  clock->advance(1s);
  CHECK(exit_code.get() == 1);
  CHECK_FALSE(manager.caches_synced());
  CHECK(cache->stopped);
}

TEST_CASE("a bind failure is reported as exit code 1", "[runtime][manager]") {
  HttpServer squatter("squatter");
  REQUIRE(squatter.start("127.0.0.1:0").ok());
  auto options = local_options();
  options.health_probe_bind_address = "127.0.0.1:" + std::to_string(squatter.port());
  Manager manager(options);
  std::stop_source stop;
  CHECK(manager.run(stop.get_token()) == 1);
}

namespace {

class AllowOneToken final : public AccessReviewer {
 public:
  kube::Result<std::optional<AuthenticatedUser>> review_token(std::string_view token) override {
    if (token == "good" || token == "reader-less") {
      AuthenticatedUser user;
      user.name = std::string(token);
      return std::optional<AuthenticatedUser>(user);
    }
    return std::optional<AuthenticatedUser>();
  }
  kube::Result<bool> review_access(const AuthenticatedUser& user, std::string_view verb,
                                   std::string_view path) override {
    return user.name == "good" && verb == "get" && path == "/metrics";
  }
};

}  // namespace

TEST_CASE("/metrics asks the authorizer when one is configured", "[runtime][manager]") {
  auto options = local_options();
  options.metrics_authorizer = std::make_shared<MetricsAuthorizer>(std::make_shared<AllowOneToken>());
  Manager manager(options);
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced() && manager.metrics_port() != 0; }));
  using boost::beast::http::verb;
  CHECK(http_request(manager.metrics_port(), "/metrics").status == 401);
  CHECK(http_request(manager.metrics_port(), "/metrics", verb::get, "Bearer unknown").status == 401);
  CHECK(http_request(manager.metrics_port(), "/metrics", verb::get, "Bearer reader-less").status == 403);
  CHECK(http_request(manager.metrics_port(), "/metrics", verb::get, "Bearer good").status == 200);
  // Probes stay open: the kubelet has no token.
  CHECK(http_request(manager.probe_port(), "/healthz").status == 200);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("secure metrics: /metrics over HTTPS (self-signed) and authorized, probes plain",
          "[runtime][manager][tls]") {
  using myop::runtime::testing::https_get;
  auto options = local_options();
  options.metrics_secure = true;
  options.metrics_authorizer = std::make_shared<MetricsAuthorizer>(std::make_shared<AllowOneToken>());
  Manager manager(options);
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced() && manager.metrics_port() != 0; }));
  CHECK(https_get(manager.metrics_port()).status == 401);
  CHECK(https_get(manager.metrics_port(), "Bearer unknown").status == 401);
  CHECK(https_get(manager.metrics_port(), "Bearer reader-less").status == 403);
  auto allowed = https_get(manager.metrics_port(), "Bearer good");
  CHECK(allowed.status == 200);
  CHECK_FALSE(allowed.served_serial.empty());
  CHECK_THROWS(
      http_request(manager.metrics_port(), "/metrics", boost::beast::http::verb::get, "Bearer good"));
  CHECK(http_request(manager.probe_port(), "/healthz").status == 200);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("secure metrics with a cert dir that has no certificate does not start",
          "[runtime][manager][tls]") {
  auto options = local_options();
  options.metrics_secure = true;
  options.metrics_cert_dir = "/nonexistent/metrics-certs";
  Manager manager(options);
  std::stop_source stop;
  CHECK(manager.run(stop.get_token()) == 1);
}

TEST_CASE("probes by name: /readyz/<check> and /healthz/<check> answer for one check, 404 for no such check",
          "[runtime][manager][probes]") {
  Manager manager(local_options());
  auto cache = std::make_shared<FakeCache>();
  manager.add_runnable(cache);
  std::atomic<bool> extra_ok{true};
  manager.add_ready_check("extra", [&]() -> myop::base::Result<void, std::string> {
    if (extra_ok) return {};
    return myop::base::fail("extra says no");
  });
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return cache->started && manager.probe_port() != 0; }));
  const auto port = manager.probe_port();

  const auto unsynced = http_request(port, "/readyz/fake-cache");
  CHECK(unsynced.status == 503);
  CHECK(unsynced.body == "fake-cache: not synced\n");
  CHECK(http_request(port, "/readyz/extra").status == 200);  // one check alone
  CHECK(http_request(port, "/readyz/nothing-of-that-name").status == 404);
  cache->sync();
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  CHECK(http_request(port, "/readyz/fake-cache").status == 200);
  CHECK(http_request(port, "/readyz").status == 200);
  extra_ok = false;
  const auto failing = http_request(port, "/readyz");
  CHECK(failing.status == 503);
  CHECK(failing.body == "extra: extra says no\n");
  CHECK(http_request(port, "/readyz/fake-cache").status == 200);

  // Liveness: one check per server it runs (no webhook here), each by name too.
  CHECK(http_request(port, "/healthz").status == 200);
  CHECK(http_request(port, "/healthz/server-probes").status == 200);
  CHECK(http_request(port, "/healthz/server-metrics").status == 200);
  CHECK(http_request(port, "/healthz/server-webhook").status == 404);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("a server that can no longer serve makes the process not live, naming it",
          "[runtime][manager][probes]") {
  Manager manager(local_options());
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced() && manager.metrics_port() != 0; }));
  CHECK(http_request(manager.probe_port(), "/healthz").status == 200);
  const int fd = myop::runtime::testing::listening_socket(manager.metrics_port());
  REQUIRE(fd >= 0);
  ::shutdown(fd, SHUT_RDWR);
  REQUIRE(eventually([&] { return http_request(manager.probe_port(), "/healthz").status == 500; }));
  const auto dead = http_request(manager.probe_port(), "/healthz");
  CHECK_THAT(dead.body, Catch::StartsWith("server-metrics: stopped listening"));
  CHECK(http_request(manager.probe_port(), "/healthz/server-metrics").status == 500);
  CHECK(http_request(manager.probe_port(), "/healthz/server-probes").status == 200);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

namespace {

// A webhook certificate folder (tls.crt, tls.key) valid for `validity` from now.
struct WebhookCertificateFolder {
  explicit WebhookCertificateFolder(std::chrono::seconds validity) {
    path = std::filesystem::temp_directory_path() /
           ("myop-webhook-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
    CertificateSpec spec;
    spec.names = {"localhost", "127.0.0.1"};
    spec.validity = validity;
    auto pair = issue_certificate(spec);
    REQUIRE(pair.ok());
    std::ofstream(path / "tls.crt") << pair->certificate_pem;
    std::ofstream(path / "tls.key") << pair->key_pem;
  }
  ~WebhookCertificateFolder() { std::filesystem::remove_all(path); }
  static int& counter() {
    static int value = 0;
    return value;
  }
  std::filesystem::path path;
};

ManagerOptions webhook_options(const WebhookCertificateFolder& folder) {
  auto options = local_options();
  options.webhook_bind_address = "127.0.0.1:0";
  options.webhook_cert_dir = folder.path.string();
  return options;
}

}  // namespace

TEST_CASE("webhook readiness: listening with a valid certificate, whatever the caches",
          "[runtime][manager][probes][webhook]") {
  WebhookCertificateFolder folder(std::chrono::hours(1));
  Manager manager(webhook_options(folder));
  auto cache = std::make_shared<FakeCache>();  // never synced
  manager.add_runnable(cache);
  manager.add_webhook("/convert", [](const HttpRequest&) {
    return HttpResponse{200, "application/json", "{}"};
  });
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return cache->started.load(); }));
  CHECK(manager.webhook_port() != 0);
  const auto port = manager.probe_port();
  CHECK(http_request(port, "/readyz/webhook").status == 200);
  const auto whole = http_request(port, "/readyz");
  CHECK(whole.status == 503);
  CHECK(whole.body == "fake-cache: not synced\n");
  CHECK(http_request(port, "/healthz/server-webhook").status == 200);
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("with no cache to sync, /readyz is the webhook's readiness: an expired certificate is not ready",
          "[runtime][manager][probes][webhook]") {
  WebhookCertificateFolder folder(std::chrono::seconds(2));
  Manager manager(webhook_options(folder));
  manager.add_webhook("/convert", [](const HttpRequest&) {
    return HttpResponse{200, "application/json", "{}"};
  });
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  const auto port = manager.probe_port();
  CHECK(http_request(port, "/readyz").status == 200);
  CHECK(http_request(port, "/readyz/webhook").status == 200);
  // The certificate's notAfter passes (2 s): the webhook still listens, but no API server would
  // take its answers.
  REQUIRE(eventually([&] { return http_request(port, "/readyz/webhook").status == 503; }, 10s));
  const auto expired = http_request(port, "/readyz");
  CHECK(expired.status == 503);
  CHECK_THAT(expired.body, Catch::StartsWith("webhook: its certificate expired"));
  CHECK(http_request(port, "/healthz").status == 200);  // alive all the same: a new certificate heals it
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("each server it runs exports its connection and limit metrics", "[runtime][manager]") {
  Manager manager(local_options());
  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced() && manager.metrics_port() != 0; }));
  const auto metrics = http_request(manager.metrics_port(), "/metrics").body;
  for (const std::string server : {"probes", "metrics"}) {
    INFO(server);
    CHECK_THAT(metrics, Catch::Contains("myoperator_http_connections{server=\"" + server + "\"}"));
    CHECK_THAT(metrics, Catch::Contains("myoperator_http_buffered_request_bytes{server=\"" + server + "\"}"));
    CHECK_THAT(
        metrics,
        Catch::Contains("myoperator_http_requests_rejected_total{reason=\"deadline\",server=\"" + server));
  }
  CHECK_THAT(metrics, Catch::Contains("myoperator_http_connections{server=\"metrics\"} 1"));  // this scrape
  CHECK_THAT(metrics, !Catch::Contains("server=\"webhook\""));                                // not run
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}
