#pragma once
// The renew deadline of a Lease this replica holds (the leader's, a shard member's): once started, if
// `deadline` passes after the last renewal without another, `on_expired` is called, once (per start),
// from the watchdog's own thread. It fires even while a renewal request hangs, so the replica stops writing
// before any other may take the Lease over.
//
// Runs on the injected clock (a PeriodicRunner that sleeps until the deadline of the last renewal
// seen, and again when a renewal moved it). Tests: test/unit/runtime/election/lease_watchdog_test.cpp.
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "runtime/clock.h"
#include "runtime/manager/periodic_runner.h"

namespace myop::runtime {

// What a Lease holder calls when it has lost its Lease (LeaderElector::on_lost, ShardCoordinator::
// on_lost): set by the manager, called from whichever thread found the loss, outside any lock, so it
// may call back into the holder.
class LostCallback {
 public:
  void set(std::function<void()> callback);
  void operator()() const;

 private:
  mutable std::mutex mutex_;
  std::function<void()> callback_;
};

class LeaseWatchdog {
 public:
  LeaseWatchdog(std::string name, Duration deadline, std::shared_ptr<const base::Clock> clock,
                std::function<void()> on_expired);
  LeaseWatchdog(const LeaseWatchdog&) = delete;
  LeaseWatchdog& operator=(const LeaseWatchdog&) = delete;

  // A renewal that succeeded, as of `at` (the deadline never moves back).
  void renewed(TimePoint at);
  // Starts watching the deadline of the last renewal; call renewed() first.
  void start();
  // Stops watching (from any thread, the callback's included).
  void stop();

  // The deadline of the last renewal has passed at `now` (whether or not the watchdog has fired yet).
  bool overdue(TimePoint now) const;
  TimePoint deadline() const;
  // on_expired has been called since start().
  bool expired() const;

 private:
  StepResult check();

  const Duration deadline_;
  std::shared_ptr<const base::Clock> clock_;
  std::function<void()> on_expired_;
  mutable std::mutex mutex_;
  TimePoint last_renewal_{};
  bool expired_ = false;
  PeriodicRunner runner_;
};

}  // namespace myop::runtime
