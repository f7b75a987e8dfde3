#include "runtime/election/lease_watchdog.h"

#include <utility>

namespace myop::runtime {

void LostCallback::set(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  callback_ = std::move(callback);
}

void LostCallback::operator()() const {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    callback = callback_;
  }
  if (callback) callback();
}

LeaseWatchdog::LeaseWatchdog(std::string name, Duration deadline, std::shared_ptr<const base::Clock> clock,
                             std::function<void()> on_expired)
    : deadline_(deadline),
      clock_(clock != nullptr ? std::move(clock) : std::shared_ptr<const base::Clock>(base::system_clock())),
      on_expired_(std::move(on_expired)),
      runner_({.name = std::move(name), .clock = clock_},
              [this](const std::stop_token&) { return check(); }) {}

void LeaseWatchdog::renewed(TimePoint at) {
  std::lock_guard lock(mutex_);
  if (at > last_renewal_) last_renewal_ = at;
}

void LeaseWatchdog::start() {
  {
    std::lock_guard lock(mutex_);
    expired_ = false;
  }
  runner_.start();
}

void LeaseWatchdog::stop() { runner_.stop(); }

TimePoint LeaseWatchdog::deadline() const {
  std::lock_guard lock(mutex_);
  return last_renewal_ + deadline_;
}

bool LeaseWatchdog::overdue(TimePoint now) const { return now >= deadline(); }

bool LeaseWatchdog::expired() const {
  std::lock_guard lock(mutex_);
  return expired_;
}

StepResult LeaseWatchdog::check() {
  const TimePoint give_up_at = deadline();
  const TimePoint now = clock_->now();
  // Until the deadline of the last renewal seen; a renewal meanwhile moves it, looked at on waking.
  if (now < give_up_at) return StepResult::after(give_up_at - now);
  {
    std::lock_guard lock(mutex_);
    expired_ = true;
  }
  if (on_expired_) on_expired_();
  return StepResult::done();
}

}  // namespace myop::runtime
