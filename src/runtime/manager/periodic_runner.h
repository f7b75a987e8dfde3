#pragma once
// The one periodic loop: a step run on a thread of its own, `first_delay` after start(), then again
// when the step says (StepResult), until stop() or a step that is done.
//
//   start ──first_delay──> step ──ok──────────> wait period ──────────> step ...
//                            ├──retry (or throws)> wait the retry backoff's next delay
//                            ├──after(d)─────────> wait d (zero: at once)
//                            └──done─────────────> the thread ends
//
// - Every wait is on the injected clock (base/clock.h), so a test drives it with the fake clock.
// - A wait ends early on stop() (the runner ends; a step in flight sees its stop token requested and
//   should return soon) and on trigger() (the step runs now; a trigger while a step runs makes the
//   next wait end at once, so none is lost).
// - An exception out of a step is caught, logged with the runner's name, and counted as a failure
//   (retry()): no exception escapes the thread.
// - Failures in a row grow the retry wait as `retry` says (base/backoff.h); ok() starts it over.
//
// The orphan sweep, the storage migration, the webhook certificates, the certificate file watcher,
// the Lease renewals and the shard coordinator's work run on it; LeaseWatchdog (runtime/
// lease_watchdog.h) too. Tests: test/unit/runtime/manager/periodic_runner_test.cpp.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "base/backoff.h"
#include "base/clock.h"
#include "runtime/clock.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

// What a step asks for next.
class StepResult {
 public:
  enum class Kind { ok, retry, after, done };

  // It did its work: the next step one period later; the retry backoff starts over.
  static StepResult ok() { return StepResult(Kind::ok, Duration::zero()); }
  // It failed: the next step after the retry backoff's next delay.
  static StepResult retry() { return StepResult(Kind::retry, Duration::zero()); }
  // The next step after `delay` (zero: at once), whatever the period; the failures counted so far stay.
  static StepResult after(Duration delay) { return StepResult(Kind::after, delay); }
  // Nothing more to do: the runner's thread ends (start() runs it again).
  static StepResult done() { return StepResult(Kind::done, Duration::zero()); }

  Kind kind() const { return kind_; }
  Duration delay() const { return delay_; }

 private:
  StepResult(Kind kind, Duration delay) : kind_(kind), delay_(delay) {}
  Kind kind_;
  Duration delay_;
};

struct PeriodicRunnerOptions {
  std::string name;  // in logs, and the Runnable's name
  Duration first_delay = Duration::zero();
  Duration period = std::chrono::minutes(1);
  // The waits after failed steps; the default retries every 5 s.
  base::BackoffSettings retry = base::constant_backoff(std::chrono::seconds(5));
  // For the manager: work that writes runs only while this replica leads.
  bool needs_leader_election = false;
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

class PeriodicRunner final : public Runnable {
 public:
  // The step gets the runner's stop token: requested by stop(), it should end what it does.
  using Step = std::function<StepResult(std::stop_token)>;

  PeriodicRunner(PeriodicRunnerOptions options, Step step);
  ~PeriodicRunner() override;
  PeriodicRunner(const PeriodicRunner&) = delete;
  PeriodicRunner& operator=(const PeriodicRunner&) = delete;

  std::string name() const override { return options_.name; }
  // Starts the thread (first step `first_delay` from now); nothing when it runs already.
  void start() override;
  // Ends the wait or asks the step in flight to stop, and joins the thread. From the runner's own
  // thread (a step, or a callback a step made) it only asks: the thread ends once the step returns.
  void stop() override;
  bool has_synced() const override { return true; }
  void on_synced(std::function<void()> callback) override { callback(); }
  bool needs_leader_election() const override { return options_.needs_leader_election; }

  // Runs the step now instead of at the end of the current wait.
  void trigger();
  // True between start() and the end of the thread (stop(), or a step that was done).
  bool running() const;

 private:
  void run(const std::stop_token& stop);
  StepResult run_step(const std::stop_token& stop);

  PeriodicRunnerOptions options_;
  Step step_;
  std::mutex lifecycle_mutex_;  // start() and stop() from other threads, one at a time
  mutable std::mutex mutex_;    // what the wait reads, and the thread's identity
  std::condition_variable_any wake_;
  bool triggered_ = false;
  bool running_ = false;
  std::stop_source stop_;
  std::thread::id thread_id_;
  std::jthread thread_;
};

}  // namespace myop::runtime
