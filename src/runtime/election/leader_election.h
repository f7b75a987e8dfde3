#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection:
//
// - A candidate polls every retry_period (jittered up to +20%). It takes the Lease when it is
//   free (no holder: released) or when the holder has not renewed it for lease_duration, as
//   measured on this replica's own clock from when it last saw the record change (no trust in
//   other clocks). Writes use the Lease's resourceVersion, so two candidates cannot both win.
// - The leader renews every retry_period. If no renewal has succeeded for
//   renew_deadline - retry_period/2, it declares leadership lost: may_write() turns false, any
//   renewal in flight is cancelled and on_lost fires, so the replica stops writing before its
//   renew deadline passes, well before another replica may take over (lease_duration).
// - release() (graceful stop) empties holderIdentity so a standby takes over at its next poll.
// - Times written are MicroTime from the clock's wall_now(); the timers and may_write() run on its
//   monotonic now(). leader_election_master_status{name} is 1 while leading.
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>

#include "base/clock.h"
#include "kube/client.h"
#include "runtime/clock.h"
#include "runtime/election/leader_elector.h"
#include "runtime/election/lease_watchdog.h"
#include "runtime/manager/periodic_runner.h"

namespace myop::runtime {

struct LeaderElectionOptions {
  std::string namespace_name;
  std::string name;  // the Lease; required
  // Unique per replica; default: hostname + random suffix.
  std::string identity;
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  std::shared_ptr<prometheus::Registry> registry;  // may be null
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

class LeaseLeaderElector final : public LeaderElector {
 public:
  LeaseLeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionOptions options);
  ~LeaseLeaderElector() override;

  bool acquire(std::stop_token stop) override;
  void on_lost(std::function<void()> callback) override;
  bool is_leader() const override { return leading_; }
  void release() override;

  // True while leading and the last renewal is recent enough that no one else can hold the Lease.
  bool may_write() const;
  const std::string& identity() const { return options_.identity; }

 private:
  enum class Attempt { acquired, held_by_other, failed };
  Attempt try_acquire_or_renew(std::stop_token stop);
  // One renewal, every retry_period while leading.
  StepResult renew(const std::stop_token& stop);
  void lose(const std::string& why);
  void set_leading(bool leading);
  Duration jittered(Duration period);

  std::shared_ptr<kube::Client> client_;
  LeaderElectionOptions options_;
  prometheus::Gauge* master_status_ = nullptr;

  mutable std::mutex mutex_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  // What we last saw of the Lease, and when (our clock) it last changed.
  std::string observed_holder_;
  std::string observed_renew_time_;
  TimePoint observed_at_{};
  int observed_transitions_ = 0;
  LostCallback on_lost_;
  std::stop_source attempt_stop_;
  std::mt19937_64 random_{std::random_device{}()};
  // Last: they stop before what they use goes.
  LeaseWatchdog watchdog_;
  PeriodicRunner renewer_;
};

}  // namespace myop::runtime
