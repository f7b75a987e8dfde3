#pragma once
// Time source for the runtime. Injected everywhere time matters (queue ordering, backoff, aging,
// leases) so unit tests can drive time by hand instead of sleeping and flaking.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace myop::runtime {

using Duration = std::chrono::steady_clock::duration;
using TimePoint = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Blocks on `condition` until notified or `deadline` (in this clock's time) passes. A fake clock
  // cannot know when its owner advances it, so it may wake early; callers always re-check state.
  virtual void wait_until(std::condition_variable& condition, std::unique_lock<std::mutex>& lock,
                          TimePoint deadline) const = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void wait_until(std::condition_variable& condition, std::unique_lock<std::mutex>& lock,
                  TimePoint deadline) const override {
    condition.wait_until(lock, deadline);
  }
};

// Test double: time moves only when the test calls advance().
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(1)) : now_(start) {}
  TimePoint now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  void advance(Duration by) {
    std::lock_guard lock(mutex_);
    now_ += by;
  }
  void wait_until(std::condition_variable& condition, std::unique_lock<std::mutex>& lock,
                  TimePoint deadline) const override {
    // Poll in short real-time slices: the waiter re-checks against fake time after each slice.
    if (now() < deadline) condition.wait_for(lock, std::chrono::milliseconds(1));
  }

 private:
  mutable std::mutex mutex_;
  TimePoint now_;
};

inline double to_seconds(Duration duration) { return std::chrono::duration<double>(duration).count(); }

}  // namespace myop::runtime
