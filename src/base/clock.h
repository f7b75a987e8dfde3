// Time for every layer: what time it is, and timers that wait for it.
//
// The operator's waits for time to pass (a work queue until its next item is due, a watch before
// reconnecting, a leader before renewing, a rate limit before the next token) go through a Clock, so
// a test can inject a fake one (test/unit/support/fake_clock.h) and move time by hand instead of
// sleeping; I/O deadlines (sockets, exec plugins) and the trace batch queue use the real clocks. A
// wait ends when the caller's predicate holds, its stop token is requested, or the clock reaches
// the deadline, whichever comes first; nothing wakes up periodically to look.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

namespace myop::base {

// Intervals and deadlines: monotonic, immune to wall-clock steps.
using Duration = std::chrono::steady_clock::duration;
using TimePoint = std::chrono::steady_clock::time_point;
// Times written to the API server (lease renewTime, event eventTime, condition times).
using WallTime = std::chrono::system_clock::time_point;

inline double to_seconds(Duration duration) { return std::chrono::duration<double>(duration).count(); }

class Clock {
 public:
  using Predicate = std::function<bool()>;

  virtual ~Clock() = default;

  virtual TimePoint now() const = 0;
  virtual WallTime wall_now() const = 0;

  // Blocks on `condition` until `ready()` holds, `stop` is requested, or this clock reaches
  // `deadline` (TimePoint::max(): no deadline). `lock` holds the mutex that guards what `ready`
  // reads, on entry and on return; whoever changes that state notifies `condition` while holding
  // the mutex (or after releasing it). Returns the last value of `ready()`.
  virtual bool wait_until(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                          std::stop_token stop, TimePoint deadline, const Predicate& ready) const = 0;

  bool wait_for(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                std::stop_token stop, Duration timeout, const Predicate& ready) const;

  // Sleeps until this clock reaches `deadline`; false when `stop` was requested first.
  bool sleep_until(std::stop_token stop, TimePoint deadline) const;
  bool sleep_for(std::stop_token stop, Duration duration) const;
};

// The real clocks: std::chrono::steady_clock and std::chrono::system_clock.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  WallTime wall_now() const override { return std::chrono::system_clock::now(); }
  bool wait_until(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                  std::stop_token stop, TimePoint deadline, const Predicate& ready) const override;
};

// One shared real clock: the default of every options struct that takes a clock.
const std::shared_ptr<const Clock>& system_clock();

}  // namespace myop::base
