#pragma once
// Several active replicas sharing the work (--sharding): membership, slot assignment and safe handover
// on coordination.k8s.io Leases. docs/sharding.md draws the states and gives the timing argument.
//
// - Membership: each replica holds a member Lease, <name>-member-<hash of identity>, renewed every
//   retry_period like the leader Lease. A member is live while this replica has seen its renewTime
//   change within lease_duration, on this replica's own clock (no trust in other clocks). A member
//   that could not renew for renew_deadline - retry_period/2 closes its gate at once (stops writing)
//   and the process exits, exactly as a leader that lost its Lease: by then no other replica has
//   taken anything from it, since that takes lease_duration without a renewal.
// - Assignment: runtime/sharding/shard_ring.h's assign_slots() over the live members, which every replica
//   computes alike.
// - Ownership: each slot has a Lease, <name>-slot-NN, whose holderIdentity is the replica that may
//   write in it. It changes only by a conditional update (the resourceVersion read), so two replicas
//   can never both take it. A replica takes a slot assigned to it when the slot Lease is free, or when
//   its holder's membership has expired (confirmed by a fresh read of the holder's member Lease, so a
//   stalled watch cannot make a live member look dead).
// - Handover: the old owner, once the assignment moved the slot away, refuses new work in it and waits
//   for its reconciles in flight (ShardGate::deactivate), stops the slot's watches and drops its
//   caches, and only then frees the slot Lease. The new owner starts the slot's watches as soon as the
//   slot is assigned to it (reading is harmless), takes the Lease when it is free, and opens its gate
//   for the slot once the slot's caches have synced.
// - Graceful stop: every slot is drained and freed, then the member Lease deleted, so the others take
//   over at once instead of after lease_duration.
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/client.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/clock.h"
#include "runtime/election/lease_record.h"
#include "runtime/election/lease_watchdog.h"
#include "runtime/manager/periodic_runner.h"
#include "runtime/sharding/shard_gate.h"

namespace myop::runtime {

struct ShardingOptions {
  std::string namespace_name;  // where the Leases live; required
  std::string name;            // prefix of the Lease names; required
  // Unique per process (a restarted replica is a new member); default: hostname + random suffix.
  std::string identity;
  // Every Lease of the group carries <group_label>=<name>; the coordinator watches that selector.
  std::string group_label = "shard-group";
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  // The assignment stands still while a live member (this one included) joined less than this long
  // ago: replicas started together (a Deployment's rollout) renew within moments of each other, and
  // none should list slots only to hand them on a second later. Slots keep their owners meanwhile.
  Duration join_window = std::chrono::seconds(2);
  // <prefix>_slots_owned, <prefix>_members, <prefix>_handover_seconds.
  std::string metrics_prefix = "shard";
  std::shared_ptr<prometheus::Registry> registry;  // may be null
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// When each member was last seen renewing, on this replica's clock.
class MemberLiveness {
 public:
  // A member Lease seen with `renew_time`; the clock restarts when it differs from the last one.
  void observe(const std::string& identity, const std::string& renew_time, TimePoint now);
  // A slot held by `identity`: a member never seen starts its clock now.
  void notice(const std::string& identity, TimePoint now);
  // Not seen renewing for `lease_duration` (a member never noticed is not known to be anything: false).
  bool expired(const std::string& identity, TimePoint now, Duration lease_duration) const;
  // nullopt when never seen with a Lease.
  std::optional<std::string> last_renew_time(const std::string& identity) const;
  // Forgets members not seen renewing for `age` (their Leases are gone).
  void forget_older_than(TimePoint now, Duration age);
  // Since this replica first saw the member (zero when never seen).
  Duration known_for(const std::string& identity, TimePoint now) const;

 private:
  struct Seen {
    std::string renew_time;
    TimePoint changed_at{};
    TimePoint first_seen{};
    bool has_lease = false;
  };
  std::map<std::string, Seen> members_;
};

class ShardCoordinator {
 public:
  // Watches the group's Leases through `informers` (so construct it before the manager starts caches).
  ShardCoordinator(std::shared_ptr<kube::Client> client, InformerRegistry& informers,
                   std::shared_ptr<ShardGate> gate, ShardingOptions options);
  ~ShardCoordinator();
  ShardCoordinator(const ShardCoordinator&) = delete;
  ShardCoordinator& operator=(const ShardCoordinator&) = delete;

  // Joins: creates the member Lease and starts renewing it and taking the slots assigned to this
  // replica. Returns false when the member Lease cannot be written before `stop`.
  bool start(std::stop_token stop);
  // Called once, from the coordinator's thread, when membership is lost (the gate is closed already).
  void on_lost(std::function<void()> callback);
  // Called from the coordinator's thread each time a slot opens here (the gate is open for it and its
  // sharded caches redelivered), for work that no sharded cache redelivers (a fleet member's objects,
  // runtime/fleet/fleet.h). Set before start(); must not block.
  void on_slot_opened(std::function<void(int slot)> callback);
  // Leaves: drains every slot (in-flight work gets `grace`), frees the slot Leases, deletes the member
  // Lease. After a loss it only stops the threads.
  void stop(Duration grace);

  const std::string& identity() const { return options_.identity; }
  std::string member_lease_name(const std::string& identity) const;
  std::string slot_lease_name(int slot) const;
  std::vector<int> owned_slots() const { return gate_->active_slots(); }
  bool lost() const { return lost_; }

 private:
  enum class SlotState {
    idle,         // not ours
    prefetching,  // assigned to us: caches started, Lease not yet taken
    acquired,     // Lease ours, caches still syncing
    active,       // gate open
    releasing,    // drained and caches dropped, Lease still ours until freed
  };
  struct Slot {
    SlotState state = SlotState::idle;
    TimePoint wanted_since{};
    // A write taking the slot Lease failed without a clear answer (cancelled at shutdown, a broken
    // connection): it may have landed, so letting go of the slot frees the Lease if it names us.
    bool acquisition_unsettled = false;
  };

  Duration give_up_after() const;
  bool renew(std::stop_token stop);
  // The renewer's step, every retry_period.
  StepResult renew_member(const std::stop_token& stop);
  // The worker's step, every retry_period and whenever a Lease or a slot's caches change (wake()).
  StepResult work(const std::stop_token& stop);
  void step(std::stop_token stop);
  bool try_acquire(int slot, const std::optional<LeaseRecord>& lease, TimePoint now, std::stop_token stop);
  bool release(int slot, std::stop_token stop);
  // Lets go of a slot in any state: refuses new work, waits for the work in flight (until
  // `drain_stop`), drops its caches and frees its Lease. False when it could not be drained or freed
  // (it stays acquired or releasing, to be tried again).
  bool let_go(int slot, std::stop_token drain_stop, std::stop_token release_stop);
  void start_caches(int slot);
  void drop_caches(int slot);
  bool caches_synced(int slot) const;
  void lose(const std::string& why);
  void wake();
  LeaseRecord new_record(const std::string& name) const;
  void collect_expired_members(const std::vector<LeaseRecord>& members, TimePoint now, std::stop_token stop);

  std::shared_ptr<kube::Client> client_;
  InformerRegistry& informers_;
  std::shared_ptr<InformerSet> leases_;
  std::shared_ptr<ShardGate> gate_;
  ShardingOptions options_;

  prometheus::Gauge* slots_owned_ = nullptr;
  prometheus::Gauge* members_ = nullptr;
  prometheus::Histogram* handover_seconds_ = nullptr;

  mutable std::mutex mutex_;
  LostCallback on_lost_;
  std::vector<std::function<void(int slot)>> on_slot_opened_;  // set before start()
  std::atomic<bool> lost_{false};
  std::atomic<bool> joined_{false};
  TimePoint joined_at_{};  // set by start() before the work thread runs; read by it only
  // The slot table in force (index = slot); empty until the first one. Work thread only.
  std::vector<std::string> assignment_;
  std::string member_resource_version_;
  std::string member_acquire_time_;

  // Touched by the work thread only (and by stop() after it has ended).
  MemberLiveness liveness_;
  std::vector<Slot> slots_;

  // Last: they stop before what they use goes.
  LeaseWatchdog watchdog_;
  PeriodicRunner renewer_;
  PeriodicRunner worker_;
};

}  // namespace myop::runtime
