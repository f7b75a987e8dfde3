// A manager with a real informer and controller: probes follow cache sync, /metrics carries the
// docs/design.md names, a throwing reconciler is retried with backoff while the process stays up, and a
// graceful stop waits for the reconcile in flight.
#include <catch2/catch.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <future>

#include "kube/watch_source.h"
#include "runtime/cache/informer.h"
#include "runtime/manager/manager.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;
using namespace std::chrono_literals;

namespace {

struct Answer {
  unsigned status = 0;
  std::string body;
};

Answer http_get(std::uint16_t port, const std::string& target) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context context;
  boost::asio::ip::tcp::resolver resolver(context);
  beast::tcp_stream stream(context);
  stream.expires_after(30s);
  stream.connect(resolver.resolve("127.0.0.1", std::to_string(port)));
  http::request<http::string_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1");
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  return {response.result_int(), response.body()};
}

class ThrowingReconciler final : public Reconciler {
 public:
  ReconcileResult reconcile(const ReconcileRequest& request) override {
    if (request.key.name != "explodes") return ReconcileResult::done();
    std::lock_guard lock(mutex);
    attempts.push_back({std::chrono::steady_clock::now(), request.failures});
    throw std::runtime_error("reconciler bug");
  }
  std::mutex mutex;
  std::vector<std::pair<std::chrono::steady_clock::time_point, int>> attempts;
};

class SlowReconciler final : public Reconciler {
 public:
  ReconcileResult reconcile(const ReconcileRequest& request) override {
    if (request.key.name != "slow") return ReconcileResult::done();
    started = true;
    std::this_thread::sleep_for(3s);
    finished = true;
    return ReconcileResult::done();
  }
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
};

}  // namespace

TEST_CASE("probes, metrics and a throwing reconciler on the real control plane", "[runtime][manager]") {
  testenv::ScopedNamespace ns("rt-manager");
  auto client = admin_client();
  ManagerOptions options;
  options.metrics_bind_address = "127.0.0.1:0";
  options.health_probe_bind_address = "127.0.0.1:0";
  Manager manager(options);
  InformerOptions informer_options;
  informer_options.name = "configmaps";
  informer_options.namespace_name = ns.name();
  auto informer = std::make_shared<Informer>(
      kube::make_client_watch_source(client, kube::resources::config_maps(), ns.name()), informer_options);
  manager.add_runnable(informer);
  auto reconciler = std::make_shared<ThrowingReconciler>();
  ControllerOptions controller_options;
  controller_options.name = "configmap";
  controller_options.registry = manager.registry();
  auto controller = std::make_shared<Controller>(controller_options, reconciler);
  controller->watch_primary(*informer);
  manager.add_controller(controller);

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  CHECK(http_get(manager.probe_port(), "/healthz").status == 200);
  CHECK(http_get(manager.probe_port(), "/readyz").status == 200);

  testenv::kubectl_or_fail("create configmap explodes -n " + ns.name());
  REQUIRE(eventually([&] {
    std::lock_guard lock(reconciler->mutex);
    return reconciler->attempts.size() >= 6;
  }));
  {
    std::lock_guard lock(reconciler->mutex);
    // Each retry knows how many failures came before it, and the waits grow (5 ms, 10 ms, 20 ms...).
    for (std::size_t i = 0; i < reconciler->attempts.size(); ++i) {
      CHECK(reconciler->attempts[i].second == static_cast<int>(i));
    }
    const auto first_gap = reconciler->attempts[2].first - reconciler->attempts[1].first;
    const auto later_gap = reconciler->attempts[5].first - reconciler->attempts[4].first;
    CHECK(later_gap >= 4 * first_gap / 2);  // 80 ms vs 10 ms nominal; loose to absorb scheduling noise
  }
  auto metrics = http_get(manager.metrics_port(), "/metrics");
  CHECK(metrics.status == 200);
  for (const char* name :
       {"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds", "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers", "workqueue_depth", "workqueue_adds_total",
        "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "workqueue_retries_total",
        "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
        "myoperator_event_to_reconcile_seconds"}) {
    INFO(name);
    CHECK_THAT(metrics.body, Catch::Contains(std::string("# TYPE ") + name + " "));
  }
  CHECK_THAT(metrics.body,
             Catch::Contains("controller_runtime_reconcile_panics_total{controller=\"configmap\"}"));
  stop.request_stop();
  CHECK(exit_code.get() == 0);
}

TEST_CASE("graceful shutdown waits for the reconcile in flight", "[runtime][manager]") {
  testenv::ScopedNamespace ns("rt-shutdown");
  auto client = admin_client();
  ManagerOptions options;
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = "0";
  Manager manager(options);
  InformerOptions informer_options;
  informer_options.namespace_name = ns.name();
  auto informer = std::make_shared<Informer>(
      kube::make_client_watch_source(client, kube::resources::config_maps(), ns.name()), informer_options);
  manager.add_runnable(informer);
  auto reconciler = std::make_shared<SlowReconciler>();
  auto controller = std::make_shared<Controller>(ControllerOptions{}, reconciler);
  controller->watch_primary(*informer);
  manager.add_controller(controller);

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  testenv::kubectl_or_fail("create configmap slow -n " + ns.name());
  REQUIRE(eventually([&] { return reconciler->started.load(); }));
  stop.request_stop();  // what SIGTERM does through SignalWatcher
  CHECK(exit_code.get() == 0);
  CHECK(reconciler->finished);
}
