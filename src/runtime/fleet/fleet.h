// The member clusters of a fleet, engaged and disengaged while the process runs, from kubeconfig
// Secrets in the hub (runtime/fleet/kubeconfig_secret.h), as multicluster-runtime's kubeconfig provider
// does, and from ClusterProfiles (runtime/fleet/cluster_profile.h), as its cluster-inventory provider
// does: a source added engages its cluster, a rotation re-engages it under a new ClusterId, a deletion
// (or bytes that can no longer be used) disengages it, without a restart (runtime/fleet/membership.h).
//
// A member, while engaged, has what the manager has for the hub (runtime/fleet/cluster_context.h): its
// own client and transport (connections, rate limit, the API server's backoff), its own informer
// registry, a cached writer on it and an event recorder that writes the member's Events. Nothing is
// shared with the hub or another member but the process's queue and workers, and no credential is
// ever copied from one cluster to another.
//
// Controllers hook in with on_engage(): the hook subscribes the controller to the member's caches and
// makes the member's reconciler; the Engagement it returns is told when the member's caches have
// synced (work on it may start: no reconcile acts on a half-listed member) and when the member is
// disengaged (its reconciler goes; nothing of the member is used after that returns).
//
// Health: a member is ready while its caches are synced, none's list and watch keep failing, and its
// API server answers GET /readyz within `probe_timeout`; the Fleet looks every `health_period`. While
// a member is unready its keys are put back for later rather than reconciled (the controller's
// workers are not spent waiting on it), and no cluster ever holds all the workers
// (WorkQueueOptions::max_in_flight_per_cluster). A member that turns unready (its API server slow, refusing
// or gone) is logged, counted (myoperator_fleet_member_ready{cluster} 0) and marked by a Warning Event on its
// Secret in the hub; its informers back off on their own, and the process stays ready: the hub's readiness is
// never a member's. Engaging a member never blocks the hub: it runs on the Fleet's own thread, and a member
// that cannot be reached is engaged anyway and retried by its informers.
//
// After disengagement every write to the member is refused by its writer's fence, so a reconcile
// still in flight cannot write to a cluster the fleet has left. With sharding, every replica engages
// every member (warm caches), and a member is written by the replica that owns its slot alone.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kube/client.h"
#include "kube/transport.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/cache/informer_set.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/fleet/cluster_context.h"
#include "runtime/fleet/cluster_profile.h"
#include "runtime/fleet/kubeconfig_secret.h"
#include "runtime/fleet/membership.h"
#include "runtime/manager/runnable.h"
#include "runtime/sharding/shard_gate.h"

namespace myop::runtime::fleet {

struct FleetOptions {
  // The hub namespace whose labelled Secrets describe the members (the operator's own).
  std::string namespace_name;
  // Whether those Secrets are a source of members.
  bool kubeconfig_secrets = true;
  // Set: ClusterProfiles of this hub namespace are a source of members too, with credentials from
  // these access providers (runtime/fleet/cluster_profile.h).
  struct ClusterProfiles {
    std::string namespace_name;
    std::vector<AccessProvider> providers;
  };
  std::optional<ClusterProfiles> cluster_profiles;
  // The label that marks a kubeconfig Secret (any value).
  std::string label = std::string(kKubeconfigSecretLabel);
  // Each member's transport and client: its own connections, rate limit and backoff.
  kube::TransportOptions transport{};
  kube::ClientOptions client{};
  // The field manager of the members' cached writers (the manager's).
  std::string field_manager;
  // Each member's informers (the registry is not used: a member's health is the Fleet's metrics).
  InformerOptions informer{};
  // Each member's event recorder (reporting controller and instance: the manager's); none without a
  // reporting controller.
  EventRecorderOptions events{};
  // Where the Fleet's metrics go; null: not exported.
  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Events about members (engaged, refused, unready), on their Secrets; null: none.
  std::shared_ptr<EventRecorder> hub_events;
  // Set (--sharding): members are shared among the replicas. Each member is one unit of work, named
  // member_shard_unit(its name), in the slot that name hashes to; its writer writes only while that
  // slot is this replica's (ShardGate::may_write), as a namespace's objects are fenced in the hub.
  std::shared_ptr<ShardGate> shard_gate;
  Duration health_period = std::chrono::seconds(2);
  // Each member's API server is asked GET /readyz every health_period; no answer within this, or
  // not 200, makes the member unready (a paused or overloaded API server keeps its connections and
  // its watches silent, which no cache notices).
  std::chrono::milliseconds probe_timeout = std::chrono::seconds(3);
};

// The shard unit of member `name`: every object of a member is in one slot, that of this name (which no
// namespace can have: a namespace name has no '/').
std::string member_shard_unit(std::string_view name);

// What a controller does with one engaged member once its caches have synced, and when it goes.
struct Engagement {
  std::function<void()> synced;
  // The member turned unready (false) or ready again (true); see "Health" above.
  std::function<void(bool ready)> health;
  std::function<void()> disengaged;
};

using EngageHook = std::function<Engagement(const ClusterContext& member)>;

// One member as the Fleet sees it now.
struct MemberState {
  ClusterId id = kLocalCluster;
  std::string name;
  std::string server;
  bool synced = false;
  bool ready = false;
};

class Fleet final : public Runnable {
 public:
  // Watches `options.namespace_name`'s labelled Secrets through `hub` (the manager's registry, which
  // starts that informer with the other caches).
  Fleet(InformerRegistry& hub, FleetOptions options);
  ~Fleet() override;
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Called for every member engaged from now on, in the order given; before start().
  void on_engage(EngageHook hook);

  std::string name() const override { return "fleet"; }
  // Starts the Fleet's thread, which applies the Secrets' changes and watches the members' health.
  void start() override;
  // Disengages every member, then stops the thread.
  void stop() override;
  // Once the Secrets have been listed (members need not be synced: one that cannot be reached never
  // holds the process back).
  bool has_synced() const override;
  void on_synced(std::function<void()> callback) override;

  std::vector<MemberState> members() const;
  // The name of an engaged member ("" for the hub, nullopt for an id not engaged now). Takes only a
  // lock of its own, held for the look-up: callable with any other lock held (the work queue's
  // metrics call it under the queue's).
  std::optional<std::string> name_of(ClusterId id) const;

 private:
  // GET /readyz of one member, every health_period, on a thread of its own.
  struct Probe {
    std::mutex mutex;
    std::string failure;  // "" while the last probe passed
    std::jthread thread;
  };
  struct Member {
    ClusterContext context;
    std::shared_ptr<Probe> probe;
    std::string server;
    EventSubject secret;
    std::vector<Engagement> engagements;
    std::shared_ptr<std::atomic<bool>> engaged = std::make_shared<std::atomic<bool>>(true);
    bool synced = false;
    bool ready = false;
    bool announced_unready = false;
    prometheus::Gauge* ready_gauge = nullptr;
  };
  // A Secret or ClusterProfile event, or a member whose caches synced, for the Fleet's thread.
  struct Work {
    std::shared_ptr<const kube::Object> secret;  // added or updated (a ClusterProfile with `profile`)
    std::string deleted;                         // the name of a deleted Secret or ClusterProfile
    std::optional<ClusterId> synced;
    bool profile = false;
  };
  // Posts the events of one source of members.
  void watch_source(InformerSet& source, bool profile);

  void post(Work work);
  void run(std::stop_token stop);
  void apply(const Work& work);
  void engage(const MembershipChange& change, const EventSubject& secret);
  void disengage(ClusterId id);
  void refuse(const MembershipChange& change, const EventSubject& secret);
  void member_synced(ClusterId id);
  void start_probe(Member& member) const;
  void check_health();
  void event(const EventSubject& secret, EventSeverity severity, std::string reason, std::string note);

  FleetOptions options_;
  std::shared_ptr<InformerSet> secrets_;   // null without kubeconfig_secrets
  std::shared_ptr<InformerSet> profiles_;  // null without cluster_profiles
  std::vector<EngageHook> hooks_;
  Membership membership_;  // the Fleet's thread only

  mutable std::mutex mutex_;  // guards the members below
  std::condition_variable_any wake_;
  std::deque<Work> work_;
  std::map<ClusterId, Member> members_;
  std::size_t refused_ = 0;
  std::jthread thread_;

  mutable std::mutex names_mutex_;                    // a leaf: nothing else is taken while it is held
  std::unordered_map<ClusterId, std::string> names_;  // the engaged members' names

  prometheus::Family<prometheus::Gauge>* member_ready_ = nullptr;
  prometheus::Gauge* engaged_gauge_ = nullptr;
  prometheus::Gauge* refused_gauge_ = nullptr;
  prometheus::Family<prometheus::Counter>* changes_ = nullptr;
};

}  // namespace myop::runtime::fleet
