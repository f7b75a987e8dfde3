// Test double of base::Clock: time moves only when the test says so.
//
// advance() wakes, at once, every waiter whose deadline it reaches; nothing polls. Each waiter is
// registered with its condition variable and mutex, and advance() locks that mutex before notifying,
// so a waiter that has just found its deadline not yet reached cannot miss the wake-up.
//
// With auto_advance on, a thread that would wait for a deadline makes time jump to it instead: for
// single-threaded tests of code that backs off (the wait returns at once, and the time it skipped is
// visible in now()).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <mutex>
#include <vector>

#include "base/clock.h"

namespace myop::testing {

class FakeClock final : public base::Clock {
 public:
  // An arbitrary start away from the epoch, so that "now - something" never underflows.
  explicit FakeClock(base::TimePoint start = base::TimePoint{} + std::chrono::hours(1),
                     base::WallTime wall_start = base::WallTime{} + std::chrono::hours(24 * 365 * 56));

  base::TimePoint now() const override;
  base::WallTime wall_now() const override;
  bool wait_until(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                  std::stop_token stop, base::TimePoint deadline, const Predicate& ready) const override;

  // Moves both clocks forward and wakes every waiter whose deadline has come.
  void advance(base::Duration by);
  void set_auto_advance(bool enabled);

  // How many threads wait on this clock now, and the deadlines they wait for (earliest first;
  // TimePoint::max() for waits without one).
  std::size_t waiters() const;
  std::vector<base::TimePoint> deadlines() const;
  // Block (in real time, at most `limit`, so that a hang fails instead of stalling the run) until
  // at least `count` threads wait on this clock, or until one waits for exactly `deadline`. False
  // when the limit passed first.
  bool await_waiters(std::size_t count, std::chrono::milliseconds limit = std::chrono::seconds(10)) const;
  bool await_deadline(base::TimePoint deadline,
                      std::chrono::milliseconds limit = std::chrono::seconds(10)) const;

 private:
  struct Waiter {
    base::TimePoint deadline;
    std::condition_variable_any* condition;
    std::mutex* mutex;
    int being_notified = 0;  // advance() calls in the middle of notifying it
  };

  // Moves time to `time` (if later) and wakes the waiters it makes due; `lock` is released meanwhile.
  void advance_to(base::TimePoint time, std::unique_lock<std::mutex>& lock) const;

  mutable std::mutex mutex_;
  // Waiters register, advance() finishes notifying, await_*() calls see a change.
  mutable std::condition_variable changed_;
  mutable base::TimePoint now_;
  base::TimePoint start_;
  base::WallTime wall_start_;
  bool auto_advance_ = false;
  mutable std::list<Waiter> waiters_;
};

}  // namespace myop::testing
