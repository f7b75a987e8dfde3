// The fleet (runtime/fleet/fleet.h) on real control planes: the fixture's is the hub, two more (etcd and
// kube-apiserver only, support/member_cluster.h) are members. One manager and one controller built with
// a reconciler per cluster reconcile the hub and each member engaged from a kubeconfig Secret; a Secret
// added later engages its member without a restart, a rotation re-engages it under a new id, a deleted
// Secret disengages it (its writes refused from then on, its changes no longer reconciled), a Secret
// that cannot be used is refused alone, and a member whose API server stops answering is marked unready
// while the hub stays ready.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "../../../unit/support/metrics_reader.h"
#include "kube/resource.h"
#include "runtime/controller/builder.h"
#include "runtime/manager/manager.h"
#include "support/member_cluster.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;
using myop::testing::MemberCluster;
using namespace std::chrono_literals;

namespace {

// What each cluster's reconciler saw: "<cluster name or hub>|<namespace>/<name>", with the id of the
// cluster that reconciled it; and the member contexts it was made with.
struct Seen {
  std::mutex mutex;
  std::set<std::string> keys;
  std::map<std::string, ClusterId> ids;
  std::map<std::string, ClusterContext> contexts;  // by member name, the last made

  bool saw(const std::string& entry) {
    std::lock_guard lock(mutex);
    return keys.count(entry) == 1;
  }
  ClusterId id_of(const std::string& cluster) {
    std::lock_guard lock(mutex);
    auto found = ids.find(cluster);
    return found == ids.end() ? kLocalCluster : found->second;
  }
};

class Recording final : public Reconciler {
 public:
  Recording(std::shared_ptr<Seen> seen, std::string cluster, CacheReader deployments)
      : seen_(std::move(seen)), cluster_(std::move(cluster)), deployments_(std::move(deployments)) {}
  ReconcileResult reconcile(const ReconcileRequest& request) override {
    // The reconciler reads its own cluster's cache: the key's object is there.
    if (!deployments_.get({request.key.namespace_name, request.key.name})) return ReconcileResult::done();
    std::lock_guard lock(seen_->mutex);
    const std::string entry = cluster_ + "|" + request.key.namespace_name + "/" + request.key.name;
    seen_->keys.insert(entry);
    seen_->ids[cluster_] = request.key.cluster;
    return ReconcileResult::done();
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::string cluster_;
  CacheReader deployments_;
};

std::string deployment(const std::string& namespace_name, const std::string& name) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
         ", namespace: " + namespace_name +
         "}\nspec:\n  replicas: 0\n  selector: {matchLabels: {app: " + name +
         "}}\n  template:\n    metadata: {labels: {app: " + name +
         "}}\n    spec: {containers: [{name: app, image: example.invalid/app:1}]}\n";
}

std::optional<fleet::MemberState> member_named(fleet::Fleet& fleet, const std::string& name) {
  for (auto& member : fleet.members()) {
    if (member.name == name) return member;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("fleet: members engage, rotate, disengage and go unready at run time, the hub unaffected",
          "[runtime][fleet]") {
  testenv::ScopedNamespace ns("rt-fleet");
  MemberCluster first("rt-fleet-a");
  MemberCluster second("rt-fleet-b");
  for (const MemberCluster* member : {&first, &second})
    member->kubectl_or_fail("create namespace " + ns.name());
  first.put_secret(ns.name());

  ManagerOptions options;
  options.client = admin_client();
  options.field_manager = "fleet-test";
  options.namespaces = {ns.name()};
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = "0";
  fleet::FleetOptions fleet_options;
  fleet_options.namespace_name = ns.name();
  fleet_options.health_period = 500ms;
  fleet_options.probe_timeout = 1s;
  options.fleet = fleet_options;
  Manager manager(options);
  REQUIRE(manager.fleet() != nullptr);

  auto seen = std::make_shared<Seen>();
  ControllerBuilder builder(manager, "fleet-test");
  builder.for_kind(kube::resources::deployments());
  builder.complete([seen](const ClusterCaches& caches) {
    const std::string name = caches.cluster().name.empty() ? "hub" : caches.cluster().name;
    if (!caches.cluster().name.empty()) {
      std::lock_guard lock(seen->mutex);
      seen->contexts[name] = caches.cluster();
    }
    return std::make_shared<Recording>(seen, name, caches.cache(kube::resources::deployments()));
  });

  std::stop_source stop;
  auto exit_code = std::async(std::launch::async, [&] { return manager.run(stop.get_token()); });
  REQUIRE(eventually([&] { return manager.caches_synced(); }));

  // The hub and the member engaged at start, each reconciled by its own reconciler, under its own id.
  testenv::kubectl_apply(deployment(ns.name(), "in-hub"));
  REQUIRE(first.kubectl_apply(deployment(ns.name(), "in-a")).ok());
  CHECK(eventually([&] { return seen->saw("hub|" + ns.name() + "/in-hub"); }, 30s));
  CHECK(eventually([&] { return seen->saw("rt-fleet-a|" + ns.name() + "/in-a"); }, 30s));
  CHECK(seen->id_of("hub") == kLocalCluster);
  const ClusterId first_id = seen->id_of("rt-fleet-a");
  CHECK(first_id != kLocalCluster);
  CHECK_FALSE(seen->saw("hub|" + ns.name() + "/in-a"));
  CHECK_FALSE(seen->saw("rt-fleet-a|" + ns.name() + "/in-hub"));

  // A Secret added while running engages its member, without a restart.
  const auto engage_started = std::chrono::steady_clock::now();
  REQUIRE(second.kubectl_apply(deployment(ns.name(), "in-b")).ok());
  second.put_secret(ns.name());
  CHECK(eventually([&] { return seen->saw("rt-fleet-b|" + ns.name() + "/in-b"); }, 30s));
  WARN("member engaged and its object reconciled "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - engage_started).count()
       << " s after its Secret was written");
  // Queued once, from the synced cache: its initial-list event, before the sync, was not queued too
  // (nothing writes to it here, so no later event adds to the count).
  CHECK(metric_value(*manager.registry(), "workqueue_adds_total",
                     {{"name", "fleet-test"}, {"cluster", "rt-fleet-b"}}) == 1);

  // A Secret that cannot be used is refused, alone: the others keep working.
  const std::string bad = second.dir() + "/exec.kubeconfig";
  std::ofstream(bad) << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
                        "\"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {exec: {apiVersion: "
                        "client.authentication.k8s.io/v1, command: /bin/true}}}]\ncontexts: [{name: c, "
                        "context: {cluster: c, user: u}}]\ncurrent-context: c\n";
  MemberCluster::put_secret_as(ns.name(), "refused-member", bad);
  CHECK(eventually(
      [&] {
        return metric_value(*manager.registry(), "myoperator_fleet_members", {{"state", "refused"}}) == 1;
      },
      20s));
  REQUIRE(first.kubectl_apply(deployment(ns.name(), "in-a-after-refusal")).ok());
  CHECK(eventually([&] { return seen->saw("rt-fleet-a|" + ns.name() + "/in-a-after-refusal"); }, 30s));

  // A rotation (other bytes) re-engages the member under a new id.
  first.put_secret(ns.name(), first.admin_kubeconfig());
  CHECK(eventually(
      [&] {
        auto member = member_named(*manager.fleet(), "rt-fleet-a");
        return member && member->id != first_id && member->synced;
      },
      30s));
  REQUIRE(first.kubectl_apply(deployment(ns.name(), "in-a-rotated")).ok());
  CHECK(eventually([&] { return seen->saw("rt-fleet-a|" + ns.name() + "/in-a-rotated"); }, 30s));
  CHECK(seen->id_of("rt-fleet-a") != first_id);

  // A deleted Secret disengages its member: its changes are no longer reconciled (a hub change made
  // after it is), and a write through its writer is refused.
  ClusterContext second_context;
  {
    std::lock_guard lock(seen->mutex);
    second_context = seen->contexts.at("rt-fleet-b");
  }
  second.delete_secret(ns.name());
  CHECK(eventually([&] { return !member_named(*manager.fleet(), "rt-fleet-b"); }, 20s));
  REQUIRE(second.kubectl_apply(deployment(ns.name(), "in-b-after-delete")).ok());
  testenv::kubectl_apply(deployment(ns.name(), "in-hub-after-delete"));
  CHECK(eventually([&] { return seen->saw("hub|" + ns.name() + "/in-hub-after-delete"); }, 30s));
  std::this_thread::sleep_for(2s);
  CHECK_FALSE(seen->saw("rt-fleet-b|" + ns.name() + "/in-b-after-delete"));
  auto object =
      kube::Object::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fenced",)"
                          R"("namespace":")" +
                          ns.name() + R"("}})");
  REQUIRE(object);
  auto refused = second_context.writer->apply(kube::resources::deployments(), object.value());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().reason == kube::Reason::Cancelled);
  CHECK(refused.error().message.find("no longer engaged") != std::string::npos);

  // A member whose API server stops answering is marked unready within a few probes; the hub, and so
  // the process, stays ready; it is ready again once its API server answers.
  first.pause_apiserver();
  const auto paused = std::chrono::steady_clock::now();
  CHECK(eventually(
      [&] {
        auto member = member_named(*manager.fleet(), "rt-fleet-a");
        return member && !member->ready;
      },
      20s));
  WARN("paused member marked unready after "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - paused).count() << " s");
  CHECK(metric_value(*manager.registry(), "myoperator_fleet_member_ready", {{"cluster", "rt-fleet-a"}}) == 0);
  CHECK(manager.caches_synced());
  testenv::kubectl_apply(deployment(ns.name(), "in-hub-while-paused"));
  CHECK(eventually([&] { return seen->saw("hub|" + ns.name() + "/in-hub-while-paused"); }, 10s));
  first.resume_apiserver();
  CHECK(eventually(
      [&] {
        auto member = member_named(*manager.fleet(), "rt-fleet-a");
        return member && member->ready;
      },
      30s));

  stop.request_stop();
  CHECK(exit_code.get() == 0);
  CHECK(manager.fleet()->members().empty());
}
