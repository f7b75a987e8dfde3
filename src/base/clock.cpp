#include "base/clock.h"

namespace myop::base {
namespace {

// now + duration without overflowing: a huge duration means no deadline.
TimePoint saturated_deadline(TimePoint now, Duration duration) {
  if (duration <= Duration::zero()) return now;
  if (duration >= TimePoint::max() - now) return TimePoint::max();
  return now + duration;
}

}  // namespace

bool Clock::wait_for(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                     std::stop_token stop, Duration timeout, const Predicate& ready) const {
  return wait_until(condition, lock, std::move(stop), saturated_deadline(now(), timeout), ready);
}

bool Clock::sleep_until(std::stop_token stop, TimePoint deadline) const {
  std::mutex mutex;
  std::condition_variable_any condition;
  std::unique_lock lock(mutex);
  wait_until(condition, lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

bool Clock::sleep_for(std::stop_token stop, Duration duration) const {
  return sleep_until(std::move(stop), saturated_deadline(now(), duration));
}

bool SystemClock::wait_until(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                             std::stop_token stop, TimePoint deadline, const Predicate& ready) const {
  if (deadline == TimePoint::max()) return condition.wait(lock, stop, ready);
  return condition.wait_until(lock, stop, deadline, ready);
}

const std::shared_ptr<const Clock>& system_clock() {
  static const std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace myop::base
