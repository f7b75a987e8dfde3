#pragma once
// The manager's runnables, in groups started in a fixed order and stopped in the reverse one, as
// controller-runtime's manager runs its runnable groups:
//
//   start:  servers -> webhook certificates -> webhooks -> caches -> [leadership] -> leader-only
//   stop:   leader-only -> [release the Lease] -> caches -> webhooks -> webhook certificates -> servers
//
// - Within a group, runnables start in the order added and stop in the reverse one, one at a time.
// - A group is started once each of its runnables is synced (Runnable::has_synced: a server listens, a
//   certificate is loaded, a cache has listed everything), and only then does the next group start.
//   Nothing waits for the leader-only group: nothing starts after it. A group not synced within
//   `ready_timeout` (on the injected clock) is a failure of its first runnable that is not.
// - With a leader elector, the leader-only group starts once this replica leads; losing leadership
//   (LeaderElector::on_lost), like lose_lease(), is a failure that also says in-flight writes must be
//   cancelled at once (lease_lost()), and the Lease is then not released.
// - The first failure (Runnable::on_failed, fail(), lose_lease(), a group that never syncs) ends run():
//   whatever was started is stopped, in reverse order, and run() returns the failure, with the name of
//   the runnable. A failure after a requested stop does not count (a wait cut short by the stop).
//
// Runs on the caller's thread (no thread of its own). Tests:
// test/unit/runtime/manager/runnable_group_test.cpp.
#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "runtime/clock.h"
#include "runtime/election/leader_elector.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

// In start order.
enum class RunnableGroup {
  servers,               // the probes and metrics servers, and the metrics certificate files
  webhook_certificates,  // what the webhook serves: its certificate files or the self-managed Secret
  webhooks,              // the webhook server: before the caches, whose lists may need its conversion
  caches,                // informers, and every runnable that does not need leadership
  leader_only,           // controllers and work that writes; then the shard coordinator
};
inline constexpr std::size_t kRunnableGroups = 5;
const char* group_name(RunnableGroup group);

struct RunnableFailure {
  std::string runnable;
  std::string error;
};

struct RunnableGroupsOptions {
  // Null: the leader-only group starts right after the caches.
  std::shared_ptr<LeaderElector> leader_elector;
  Duration ready_timeout = std::chrono::minutes(2);
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

class RunnableGroups {
 public:
  explicit RunnableGroups(RunnableGroupsOptions options);
  RunnableGroups(const RunnableGroups&) = delete;
  RunnableGroups& operator=(const RunnableGroups&) = delete;

  // Before run().
  void add(RunnableGroup group, std::shared_ptr<Runnable> runnable);

  // Starts the groups, runs until `stop` is requested or the first failure, stops what it started.
  // Returns the failure; nullopt after a requested stop. Once.
  std::optional<RunnableFailure> run(std::stop_token stop);

  // Ends run() with this failure, unless another came first or a stop was requested. Any thread.
  void fail(std::string runnable, std::string error);
  // A Lease this replica held is gone (leadership, shard membership): a failure, and lease_lost().
  void lose_lease(std::string runnable, std::string error);
  // Whatever writes must stop at once: a Lease was lost. Any thread (stop() of a runnable asks).
  bool lease_lost() const;
  // What run() stops on: the caller's stop or the first failure (for a start() that blocks on it).
  std::stop_token stopping() const;
  // The group was started and every runnable of it synced (the leader-only group: started).
  bool ready(RunnableGroup group) const;

 private:
  struct State;
  // Starts `group`'s runnables and waits until they are synced; false when run() must end instead.
  bool start_group(RunnableGroup group, const std::stop_token& stopping);
  bool wait_until_synced(RunnableGroup group, const std::stop_token& stopping);
  void stop_started();

  RunnableGroupsOptions options_;
  std::array<std::vector<std::shared_ptr<Runnable>>, kRunnableGroups> groups_;
  // Shared with the callbacks given to the runnables and the elector, which may outlive run().
  std::shared_ptr<State> state_;
  std::array<std::size_t, kRunnableGroups> started_{};  // how many of each group start() was called on
  std::array<std::atomic<bool>, kRunnableGroups> ready_{};
};

}  // namespace myop::runtime
