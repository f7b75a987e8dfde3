#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/controller/controller.h"
#include "runtime/queue/prometheus_workqueue_metrics.h"
#include "support/eventually.h"
#include "support/fake_clock.h"
#include "support/in_memory_event_source.h"
#include "support/metrics_reader.h"
#include "support/object_builder.h"
#include "trace/recording_exporter.h"

using namespace std::chrono_literals;
using namespace myop::runtime;
using myop::runtime::testing::make_named;
using myop::runtime::testing::make_owned;
using myop::runtime::testing::metric_value;
using myop::testing::FakeClock;
using myop::testing::InMemoryEventSource;

namespace {

// A reconciler whose behaviour each test scripts; records what it saw.
class ScriptedReconciler final : public Reconciler {
 public:
  std::function<ReconcileResult(const ReconcileRequest&)> behaviour = [](const ReconcileRequest&) {
    return ReconcileResult::done();
  };

  ReconcileResult reconcile(const ReconcileRequest& request) override {
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
      ++running_;
      max_running_ = std::max(max_running_, running_);
      changed_.notify_all();
    }
    struct Leave {
      ScriptedReconciler* self;
      ~Leave() {
        std::lock_guard lock(self->mutex_);
        --self->running_;
        ++self->finished_;
        self->changed_.notify_all();
      }
    } leave{this};
    return behaviour(request);
  }

  // Waits (bounded, only to turn a hang into a failure) until `condition` holds.
  bool wait(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, condition);
  }
  int finished() {
    std::lock_guard lock(mutex_);
    return finished_;
  }
  std::vector<ReconcileRequest> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ReconcileRequest> requests_;
  int running_ = 0;
  int max_running_ = 0;
  int finished_ = 0;
};

// A gate the test opens to let blocked reconciles continue.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_condition;
  bool opened = false;
  void open() {
    std::lock_guard lock(mutex);
    opened = true;
    opened_condition.notify_all();
  }
  void pass() {
    std::unique_lock lock(mutex);
    opened_condition.wait(lock, [&] { return opened; });
  }
};

struct Fixture {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::shared_ptr<ScriptedReconciler> reconciler = std::make_shared<ScriptedReconciler>();
  InMemoryEventSource primary;
  InMemoryEventSource children;

  ControllerOptions options(int workers = 4) {
    ControllerOptions result;
    result.name = "test";
    result.max_concurrent_reconciles = workers;
    result.registry = registry;
    result.clock = clock;
    result.reconcile_timeout = 10s;
    return result;
  }
  double metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    auto labelled = labels;
    labelled["controller"] = "test";
    return metric_value(*registry, name, labelled).value_or(-1);
  }
};

}  // namespace

TEST_CASE("primary events are reconciled and counted", "[runtime][controller]") {
  Fixture fixture;
  Controller controller(fixture.options(), fixture.reconciler);
  controller.watch_primary(fixture.primary);
  controller.start();
  fixture.primary.emit({EventType::added, make_named("team-a", "web")});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  controller.stop();
  auto requests = fixture.reconciler->requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].key == ObjectKey{"team-a", "web"});
  CHECK(requests[0].priority == Priority::high);
  CHECK(requests[0].reconcile_id.size() == 36);
  CHECK(fixture.metric("controller_runtime_reconcile_total", {{"result", "success"}}) == 1);
  CHECK(fixture.metric("controller_runtime_reconcile_time_seconds") == 1);
  CHECK(fixture.metric("controller_runtime_max_concurrent_reconciles") == 4);
  CHECK(fixture.metric("myoperator_event_to_reconcile_seconds") == 1);
  CHECK(metric_value(*fixture.registry, "workqueue_adds_total", {{"name", "test"}}) == 1);
}

TEST_CASE("no more than max-concurrent-reconciles run at once", "[runtime][controller]") {
  Fixture fixture;
  Gate gate;
  fixture.reconciler->behaviour = [&](const ReconcileRequest&) {
    gate.pass();
    return ReconcileResult::done();
  };
  Controller controller(fixture.options(3), fixture.reconciler);
  controller.start();
  for (int i = 0; i < 10; ++i) controller.enqueue({"a", std::to_string(i)}, {Priority::high});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 3; }));
  CHECK(fixture.metric("controller_runtime_active_workers") == 3);
  CHECK(controller.active_workers() == 3);
  gate.open();
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 10; }));
  controller.stop();
  CHECK(fixture.reconciler->max_running_ == 3);
  CHECK(fixture.metric("controller_runtime_active_workers") == 0);
}

TEST_CASE("one worker is kept for user changes while backlog work runs", "[runtime][controller]") {
  Fixture fixture;
  Gate gate;
  std::mutex mutex;
  std::vector<std::string> started;
  fixture.reconciler->behaviour = [&](const ReconcileRequest& request) {
    {
      std::lock_guard lock(mutex);
      started.push_back(request.key.name);
    }
    if (request.key.name != "user") gate.pass();
    return ReconcileResult::done();
  };
  Controller controller(fixture.options(3), fixture.reconciler);
  controller.start();
  for (int i = 0; i < 10; ++i) controller.enqueue({"a", "backlog-" + std::to_string(i)}, {Priority::low});
  for (int i = 0; i < 10; ++i) controller.enqueue({"b", "status-" + std::to_string(i)}, {Priority::normal});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 2; }));
  // The third worker does not take backlog work...
  CHECK_FALSE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ > 2; },
                                       std::chrono::milliseconds(200)));
  // ...and is there for a user change at once, although two workers are busy with the backlog.
  controller.enqueue({"c", "user"}, {Priority::high});
  REQUIRE(fixture.reconciler->wait([&] {
    std::lock_guard lock(mutex);
    return std::find(started.begin(), started.end(), "user") != started.end();
  }));
  CHECK(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 2; }));
  gate.open();
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 21; }));
  controller.stop();
  CHECK(fixture.reconciler->max_running_ <= 3);
}

TEST_CASE("an exception is counted, retried with backoff, and does not kill the worker",
          "[runtime][controller]") {
  Fixture fixture;
  std::atomic<int> calls{0};
  fixture.reconciler->behaviour = [&](const ReconcileRequest&) -> ReconcileResult {
    if (++calls <= 3) throw std::runtime_error("boom");
    return ReconcileResult::done();
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  for (int attempt = 1; attempt <= 3; ++attempt) {
    REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == attempt; }));
    // Not retried before its backoff (5 ms, 10 ms, 20 ms) has passed on the injected clock.
    while (controller.queue().is_in_flight({"a", "x"})) std::this_thread::yield();
    CHECK(controller.queue().failures({"a", "x"}) == attempt);
    CHECK(fixture.reconciler->finished() == attempt);
    fixture.clock->advance(std::chrono::milliseconds(5 << (attempt - 1)));
  }
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 4; }));
  controller.stop();
  auto requests = fixture.reconciler->requests();
  CHECK(requests[3].failures == 3);
  CHECK(fixture.metric("controller_runtime_reconcile_panics_total") == 3);
  CHECK(fixture.metric("controller_runtime_reconcile_errors_total") == 3);
  CHECK(fixture.metric("controller_runtime_reconcile_total", {{"result", "error"}}) == 3);
  CHECK(fixture.metric("controller_runtime_reconcile_total", {{"result", "success"}}) == 1);
  CHECK(controller.queue().failures({"a", "x"}) == 0);
  CHECK(metric_value(*fixture.registry, "workqueue_retries_total", {{"name", "test"}}) == 3);
}

TEST_CASE("a terminal error is not retried", "[runtime][controller]") {
  Fixture fixture;
  fixture.reconciler->behaviour = [](const ReconcileRequest&) {
    return ReconcileResult::terminal_error("bad spec");
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  while (controller.queue().is_in_flight({"a", "x"})) std::this_thread::yield();
  fixture.clock->advance(1h);
  CHECK_FALSE(controller.queue().is_waiting({"a", "x"}));
  controller.stop();
  CHECK(fixture.reconciler->finished() == 1);
  CHECK(fixture.metric("controller_runtime_terminal_reconcile_errors_total") == 1);
}

TEST_CASE("waiting is not requeued, counts as a success, and the next event reconciles again",
          "[runtime][controller]") {
  Fixture fixture;
  fixture.reconciler->behaviour = [](const ReconcileRequest&) { return ReconcileResult::waiting(); };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  while (controller.queue().is_in_flight({"a", "x"})) std::this_thread::yield();
  fixture.clock->advance(1h);  // past any backoff or requeue delay: nothing comes back by itself
  CHECK_FALSE(controller.queue().is_waiting({"a", "x"}));
  CHECK(fixture.reconciler->finished() == 1);
  controller.enqueue({"a", "x"});  // the child's event
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 2; }));
  controller.stop();
  CHECK(fixture.metric("controller_runtime_reconcile_total", {{"result", "success"}}) == 2);
  CHECK(fixture.metric("controller_runtime_reconcile_errors_total") == 0);
}

TEST_CASE("requeue_after brings the key back at its time and priority", "[runtime][controller]") {
  Fixture fixture;
  std::atomic<int> calls{0};
  fixture.reconciler->behaviour = [&](const ReconcileRequest&) {
    return ++calls == 1 ? ReconcileResult::requeue_after(30s, Priority::low) : ReconcileResult::done();
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  while (controller.queue().is_in_flight({"a", "x"})) std::this_thread::yield();
  fixture.clock->advance(29s);
  CHECK(controller.queue().is_waiting({"a", "x"}));
  fixture.clock->advance(1s);
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 2; }));
  controller.stop();
  CHECK(fixture.reconciler->requests()[1].priority == Priority::low);
  CHECK(fixture.metric("controller_runtime_reconcile_total", {{"result", "requeue_after"}}) == 1);
}

TEST_CASE("a reconcile past its deadline has its stop token triggered", "[runtime][controller]") {
  Fixture fixture;
  fixture.reconciler->behaviour = [](const ReconcileRequest& request) {
    std::mutex mutex;
    std::condition_variable_any stopped;
    std::unique_lock lock(mutex);
    stopped.wait(lock, request.stop, [] { return false; });
    return ReconcileResult::error("cancelled");
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 1; }));
  fixture.clock->advance(10s);
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  controller.stop();
  CHECK(fixture.metric("controller_runtime_reconcile_errors_total") == 1);
}

TEST_CASE("owned children enqueue their controller owner, predicates filter", "[runtime][controller]") {
  Fixture fixture;
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.watch_primary(fixture.primary, {generation_changed});
  controller.watch_owned(fixture.children, "myorg.io", "MyResource");
  // Not started: inspect the queue directly.
  fixture.primary.emit(
      {EventType::updated, make_named("t", "status-only", 2, "6"), make_named("t", "status-only", 2, "5")});
  CHECK(controller.queue().depth() == 0);
  fixture.children.emit(
      {EventType::updated, make_owned("t", "web-deploy", "myorg.io/v1alpha1", "MyResource", "web")});
  CHECK(controller.queue().depth(Priority::normal) == 1);
  auto item = controller.queue().try_get();
  REQUIRE(item);
  CHECK(item->key == ObjectKey{"t", "web"});
  controller.queue().done(*item, Completion::success());
  fixture.primary.emit({EventType::updated, make_named("t", "web", 3, "7"), make_named("t", "web", 2, "6")});
  CHECK(controller.queue().depth(Priority::high) == 1);
}

TEST_CASE("sources_synced waits for every source", "[runtime][controller]") {
  Fixture fixture;
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.watch_primary(fixture.primary);
  controller.watch_owned(fixture.children, "myorg.io", "MyResource");
  fixture.children.set_synced(false);
  CHECK_FALSE(controller.sources_synced());
  fixture.children.set_synced(true);
  CHECK(controller.sources_synced());
}

TEST_CASE("a member cluster's source queues keys of that cluster, not waited for by sources_synced",
          "[runtime][controller][fleet]") {
  Fixture fixture;
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.watch_primary(fixture.primary);
  InMemoryEventSource member;
  member.set_synced(false);
  controller.watch_cluster(7, member, enqueue_object());
  CHECK(controller.sources_synced());
  member.emit({EventType::added, make_named("t", "web")});
  fixture.primary.emit({EventType::added, make_named("t", "web")});
  // The same namespace and name in two clusters: two keys.
  CHECK(controller.queue().depth() == 2);
  std::vector<ObjectKey> keys;
  while (auto item = controller.queue().try_get()) {
    keys.push_back(item->key);
    controller.queue().done(*item, Completion::success());
  }
  REQUIRE(keys.size() == 2);
  CHECK(std::ranges::count(keys, ObjectKey{"t", "web", 7}) == 1);
  CHECK(std::ranges::count(keys, ObjectKey{"t", "web"}) == 1);
}

TEST_CASE("a hub source's mapper may name keys of any cluster (an operator-wide change)",
          "[runtime][controller][fleet]") {
  Fixture fixture;
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.watch(fixture.primary, enqueue_mapped([](const ObjectEvent&) {
                     return std::vector<ObjectKey>{{"t", "web"}, {"t", "web", 7}};
                   }));
  fixture.primary.emit({EventType::added, make_named("ops", "flags")});
  std::vector<ObjectKey> keys;
  while (auto item = controller.queue().try_get()) {
    keys.push_back(item->key);
    controller.queue().done(*item, Completion::success());
  }
  std::ranges::sort(keys);
  CHECK(keys == std::vector<ObjectKey>{{"t", "web"}, {"t", "web", 7}});
}

TEST_CASE("a member's reconciles are counted under its cluster's name, the hub's as before",
          "[runtime][controller][fleet]") {
  Fixture fixture;
  ControllerOptions options = fixture.options(1);
  options.cluster_name = [](ClusterId cluster) {
    return cluster == 7 ? std::string("eu-west") : std::string();
  };
  Controller controller(options, fixture.reconciler);
  InMemoryEventSource member;
  controller.watch_primary(fixture.primary);
  controller.watch_cluster(7, member, enqueue_object());
  controller.start();
  member.emit({EventType::added, make_named("t", "web")});
  member.emit({EventType::added, make_named("t", "api")});
  fixture.primary.emit({EventType::added, make_named("t", "web")});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 3; }));
  controller.stop();
  CHECK(fixture.metric("controller_runtime_reconcile_total",
                       {{"result", "success"}, {"cluster", "eu-west"}}) == 2);
  CHECK(fixture.metric("myoperator_event_to_reconcile_seconds", {{"cluster", "eu-west"}}) == 2);
  // The work queue's too: the member's keys in series of their own.
  const auto queue = [&](const std::string& name, std::map<std::string, std::string> labels) {
    labels.emplace("name", "test");
    return metric_value(*fixture.registry, name, labels).value_or(-1);
  };
  CHECK(queue("workqueue_adds_total", {{"cluster", "eu-west"}}) == 2);
  CHECK(queue("workqueue_queue_duration_seconds", {{"cluster", "eu-west"}}) == 2);
  CHECK(queue("workqueue_work_duration_seconds", {{"cluster", "eu-west"}}) == 2);
  CHECK(queue("workqueue_depth", {{"cluster", "eu-west"}, {"priority", "normal"}}) == 0);
  // The hub's series: no cluster label, as without a fleet.
  CHECK(metric_value(*fixture.registry, "controller_runtime_reconcile_total", {{"result", "success"}},
                     "cluster") == 1);
  CHECK(metric_value(*fixture.registry, "workqueue_adds_total", {}, "cluster") == 1);
}

TEST_CASE("the work queue's figures are kept per cluster: depth, in-flight work, retries",
          "[runtime][queue][fleet]") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto clock = std::make_shared<FakeClock>();
  WorkQueueOptions options;
  options.clock = clock;
  options.metrics = std::make_shared<PrometheusWorkQueueMetrics>(*registry, "q", [](ClusterId cluster) {
    return cluster == 7 ? std::string("eu-west") : std::string();
  });
  WorkQueue queue(options);
  const auto value = [&](const std::string& name, std::map<std::string, std::string> labels) {
    labels.emplace("name", "q");
    return metric_value(*registry, name, labels).value_or(-1);
  };
  const auto hub = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return metric_value(*registry, name, labels, "cluster").value_or(-1);
  };
  queue.add(ObjectKey{"t", "a", 7});
  queue.add(ObjectKey{"t", "b", 7});
  queue.add(ObjectKey{"t", "c", 9}, {Priority::high});  // nobody names 9: not counted anywhere
  CHECK(value("workqueue_depth", {{"cluster", "eu-west"}, {"priority", "normal"}}) == 2);
  CHECK(value("workqueue_adds_total", {{"cluster", "eu-west"}}) == 2);
  auto held = queue.try_get();  // c, at high priority
  REQUIRE(held);
  CHECK(held->key.cluster == 9);
  queue.done(*held, Completion::success());
  held = queue.try_get();
  REQUIRE(held);
  CHECK(held->key.cluster == 7);
  CHECK(value("workqueue_depth", {{"cluster", "eu-west"}, {"priority", "normal"}}) == 1);
  clock->advance(std::chrono::seconds(3));
  queue.publish_in_flight_metrics();
  CHECK(value("workqueue_longest_running_processor_seconds", {{"cluster", "eu-west"}}) == 3);
  CHECK(value("workqueue_unfinished_work_seconds", {{"cluster", "eu-west"}}) == 3);
  queue.done(*held, Completion::retry());
  CHECK(value("workqueue_retries_total", {{"cluster", "eu-west"}}) == 1);
  queue.publish_in_flight_metrics();  // nothing held any more: back to zero
  CHECK(value("workqueue_longest_running_processor_seconds", {{"cluster", "eu-west"}}) == 0);
  // The hub's series saw none of it.
  CHECK(hub("workqueue_adds_total", {}) == 0);
  CHECK(hub("workqueue_depth", {{"priority", "high"}}) == 0);
  CHECK(hub("workqueue_queue_duration_seconds", {}) == 0);
}

TEST_CASE("stop waits for an in-flight reconcile within the grace period", "[runtime][controller]") {
  Fixture fixture;
  Gate gate;
  fixture.reconciler->behaviour = [&](const ReconcileRequest&) {
    gate.pass();
    return ReconcileResult::done();
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  controller.enqueue({"a", "y"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 1; }));
  std::atomic<bool> stopped{false};
  bool finished_in_time = false;
  const auto grace_ends = fixture.clock->now() + 30s;
  std::thread stopper([&] {
    finished_in_time = controller.stop(30s);
    stopped = true;
  });
  // The stopper waits out the grace period for the reconcile, which has not returned.
  REQUIRE(fixture.clock->await_deadline(grace_ends));
  CHECK_FALSE(stopped);
  gate.open();
  stopper.join();
  CHECK(finished_in_time);
  // New work stopped: the second key was never started.
  CHECK(fixture.reconciler->finished() == 1);
}

TEST_CASE("stop cancels a reconcile that outlives the grace period", "[runtime][controller]") {
  Fixture fixture;
  fixture.reconciler->behaviour = [](const ReconcileRequest& request) {
    std::mutex mutex;
    std::condition_variable_any stopped;
    std::unique_lock lock(mutex);
    stopped.wait(lock, request.stop, [] { return false; });
    return ReconcileResult::error("cancelled");
  };
  auto options = fixture.options(1);
  options.reconcile_timeout = 1h;
  Controller controller(options, fixture.reconciler);
  controller.start();
  controller.enqueue({"a", "x"});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->running_ == 1; }));
  bool finished_in_time = true;
  const auto grace_ends = fixture.clock->now() + 30s;
  std::thread stopper([&] { finished_in_time = controller.stop(30s); });
  REQUIRE(fixture.clock->await_deadline(grace_ends));  // stop() waits out the grace period
  fixture.clock->advance(29s);
  // Still inside the grace period: stop() is still waiting, so it has cancelled nothing.
  const auto deadlines = fixture.clock->deadlines();
  CHECK(std::find(deadlines.begin(), deadlines.end(), grace_ends) != deadlines.end());
  fixture.clock->advance(2s);
  stopper.join();
  CHECK_FALSE(finished_in_time);
  CHECK(fixture.reconciler->finished() == 1);
}

TEST_CASE("an idle controller sets no timer", "[runtime][controller]") {
  Fixture fixture;
  Controller controller(fixture.options(2), fixture.reconciler);
  controller.start();
  // Two workers wait for work and the watchdog for a reconcile to start: none of them until a time.
  REQUIRE(fixture.clock->await_waiters(3));
  CHECK(fixture.clock->deadlines() == std::vector<TimePoint>(3, TimePoint::max()));
  controller.stop();
}

namespace {

const myop::trace::AttributeValue* find_attribute(const myop::trace::SpanData& span, const std::string& key) {
  for (const auto& attribute : span.attributes)
    if (attribute.key == key) return &attribute.value;
  return nullptr;
}

std::string text_attribute(const myop::trace::SpanData& span, const std::string& key) {
  const auto* value = find_attribute(span, key);
  return value != nullptr && std::holds_alternative<std::string>(*value) ? std::get<std::string>(*value) : "";
}

}  // namespace

TEST_CASE("with a tracer, a reconcile is a root span with its trigger, and its API calls are children",
          "[runtime][controller][trace]") {
  Fixture fixture;
  auto exporter = std::make_shared<myop::testing::RecordingExporter>();
  auto processor =
      std::make_shared<myop::trace::BatchSpanProcessor>(exporter, myop::trace::BatchOptions{}, nullptr);
  auto options = fixture.options(1);
  options.tracer = std::make_shared<myop::trace::Tracer>(myop::trace::RatioSampler(1.0), processor);
  int calls = 0;
  fixture.reconciler->behaviour = [&calls](const ReconcileRequest&) {
    // What the API client does on the worker thread (kube/request_span.h): a child of the current span.
    myop::trace::Span call =
        myop::trace::start_child_of_current("PATCH deployments", myop::trace::SpanKind::client);
    call.end();
    return ++calls == 1 ? ReconcileResult::error("the API server said no") : ReconcileResult::done();
  };
  Controller controller(options, fixture.reconciler);
  controller.watch_primary(fixture.primary);
  controller.start();
  fixture.primary.emit({EventType::updated, make_named("team-a", "web"), make_named("team-a", "web")});
  // The first reconcile fails; the retry (after the fake clock's backoff) succeeds.
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  REQUIRE(myop::testing::eventually([&] {
    fixture.clock->advance(1s);
    return fixture.reconciler->finished() == 2;
  }));
  controller.stop();
  processor->shutdown(10s);

  std::vector<myop::trace::SpanData> roots;
  std::vector<myop::trace::SpanData> children;
  for (auto& span : exporter->spans()) (span.parent_span_id.valid() ? children : roots).push_back(span);
  REQUIRE(roots.size() == 2);
  REQUIRE(children.size() == 2);
  const auto& failed = roots[0];
  CHECK(failed.name == "reconcile");
  CHECK(text_attribute(failed, "myoperator.controller") == "test");
  CHECK(text_attribute(failed, "k8s.namespace.name") == "team-a");
  CHECK(text_attribute(failed, "myoperator.name") == "web");
  CHECK(text_attribute(failed, "myoperator.result") == "error");
  CHECK(text_attribute(failed, "myoperator.trigger.event_type") == "MODIFIED");
  CHECK(find_attribute(failed, "myoperator.trigger.wait_seconds") != nullptr);
  CHECK(find_attribute(failed, "myoperator.queue.wait_seconds") != nullptr);
  CHECK(text_attribute(failed, "myoperator.reconcile_id").size() == 36);
  CHECK(failed.status == myop::trace::StatusCode::error);
  CHECK(failed.status_message == "the API server said no");

  const auto& retried = roots[1];
  CHECK(text_attribute(retried, "myoperator.result") == "success");
  // The event still counts for the latency metric through the retry, so the retry names it too.
  CHECK(text_attribute(retried, "myoperator.trigger.event_type") == "MODIFIED");
  CHECK(retried.status == myop::trace::StatusCode::unset);
  CHECK(retried.trace_id != failed.trace_id);  // one trace per reconcile

  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(children[i].trace_id == roots[i].trace_id);
    CHECK(children[i].parent_span_id == roots[i].span_id);
  }
}

TEST_CASE("without a tracer, nothing is current during a reconcile", "[runtime][controller][trace]") {
  Fixture fixture;
  std::atomic<bool> saw_span{true};
  fixture.reconciler->behaviour = [&saw_span](const ReconcileRequest&) {
    saw_span = myop::trace::current_span_context() != nullptr;
    return ReconcileResult::done();
  };
  Controller controller(fixture.options(1), fixture.reconciler);
  controller.watch_primary(fixture.primary);
  controller.start();
  fixture.primary.emit({EventType::added, make_named("team-a", "web")});
  REQUIRE(fixture.reconciler->wait([&] { return fixture.reconciler->finished_ == 1; }));
  controller.stop();
  CHECK_FALSE(saw_span);
}
