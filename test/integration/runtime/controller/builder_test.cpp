// The controller builder on the real control plane: two controllers of one manager that watch the
// same kind share one informer (one watch), each gets every key of its own kind, owned objects map to
// their owner, the builder hands out the cache it watches (listed by namespace), and a leader-only runnable
// starts only once the caches are synced.
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>

#include "runtime/controller/builder.h"
#include "runtime/manager/manager.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;
using namespace std::chrono_literals;

namespace {

struct Recording final : Reconciler {
  ReconcileResult reconcile(const ReconcileRequest& request) override {
    std::lock_guard lock(mutex);
    keys.insert(request.key.to_string());
    return ReconcileResult::done();
  }
  bool saw(const std::string& key) {
    std::lock_guard lock(mutex);
    return keys.count(key) == 1;
  }
  std::mutex mutex;
  std::set<std::string> keys;
};

struct LeaderWork final : Runnable {
  explicit LeaderWork(Manager& manager) : manager(manager) {}
  std::string name() const override { return "leader-work"; }
  bool needs_leader_election() const override { return true; }
  bool has_synced() const override { return true; }
  void on_synced(std::function<void()> callback) override { callback(); }
  void start() override {
    synced_at_start = manager.caches_synced();
    started = true;
  }
  void stop() override { stopped = true; }
  Manager& manager;
  std::atomic<bool> started{false}, stopped{false}, synced_at_start{false};
};

}  // namespace

TEST_CASE("builder: controllers share informers, owns maps children to owners, leader work starts last",
          "[runtime][builder]") {
  testenv::ScopedNamespace ns("rt-builder");
  ManagerOptions options;
  options.client = admin_client();
  options.field_manager = "builder-test";
  options.namespaces = {ns.name()};
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = "0";
  Manager manager(options);

  auto first = std::make_shared<Recording>();
  auto second = std::make_shared<Recording>();
  // Pods are owned by ConfigMaps here only in name: any kind can own any other.
  ControllerBuilder(manager, "first").for_kind(kube::resources::config_maps()).complete(first);
  ControllerBuilder second_builder(manager, "second");
  second_builder.for_kind(kube::resources::config_maps()).owns(kube::resources::secrets());
  // What the reconciler would read: the controller's own cache of the kind, not a cache of its own.
  const CacheReader config_maps = second_builder.cache(kube::resources::config_maps());
  CHECK_THROWS_AS(second_builder.cache(kube::resources::namespaces()), std::logic_error);
  second_builder.complete(second);
  CHECK(manager.informers().size() == 2);  // configmaps once for both, secrets
  auto leader_work = std::make_shared<LeaderWork>(manager);
  manager.add_runnable(leader_work);

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));
  REQUIRE(eventually([&] { return leader_work->started.load(); }));
  CHECK(leader_work->synced_at_start);

  testenv::kubectl_or_fail("create configmap owner -n " + ns.name());
  const std::string uid =
      testenv::kubectl_or_fail("get configmap owner -n " + ns.name() + " -o jsonpath={.metadata.uid}");
  CHECK(eventually([&] { return first->saw(ns.name() + "/owner") && second->saw(ns.name() + "/owner"); }));
  // The reader lists one namespace from the cache the events came from; out of scope lists nothing.
  // (The Secret below is no object to read back: the garbage collector deletes it, as its owner
  // reference names no ConfigMap that exists.)
  const auto listed = config_maps.list(ns.name());
  CHECK(std::any_of(listed.begin(), listed.end(),
                    [](const ObjectPointer& object) { return object->name() == "owner"; }));
  CHECK(config_maps.get({ns.name(), "owner"}) != nullptr);
  CHECK(config_maps.list("default").empty());
  testenv::kubectl_apply(R"(apiVersion: v1
kind: Secret
metadata:
  name: child
  namespace: )" + ns.name() +
                         R"(
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner-of-child, uid: )" +
                         uid + R"(, controller: true}
)");
  CHECK(eventually([&] { return second->saw(ns.name() + "/owner-of-child"); }));
  CHECK_FALSE(first->saw(ns.name() + "/owner-of-child"));  // first does not own Secrets
  CHECK_FALSE(second->saw(ns.name() + "/child"));          // a child is never a key of its own

  stop.request_stop();
  CHECK(exit_code.get() == 0);
  CHECK(leader_work->stopped);
}
