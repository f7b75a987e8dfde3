#include "support/fake_clock.h"

#include <algorithm>

namespace myop::testing {

FakeClock::FakeClock(base::TimePoint start, base::WallTime wall_start)
    : now_(start), start_(start), wall_start_(wall_start) {}

base::TimePoint FakeClock::now() const {
  std::lock_guard lock(mutex_);
  return now_;
}

base::WallTime FakeClock::wall_now() const {
  std::lock_guard lock(mutex_);
  return wall_start_ + std::chrono::duration_cast<base::WallTime::duration>(now_ - start_);
}

bool FakeClock::wait_until(std::condition_variable_any& condition, std::unique_lock<std::mutex>& lock,
                           std::stop_token stop, base::TimePoint deadline, const Predicate& ready) const {
  if (ready() || stop.stop_requested()) return ready();
  std::list<Waiter>::iterator self;
  {
    std::unique_lock clock_lock(mutex_);
    if (now_ >= deadline) {
      clock_lock.unlock();
      return ready();
    }
    if (auto_advance_ && deadline != base::TimePoint::max()) {
      // Waiters woken by the jump may share the caller's mutex: release it meanwhile.
      lock.unlock();
      advance_to(deadline, clock_lock);
      clock_lock.unlock();
      lock.lock();
      return ready();
    }
    self = waiters_.insert(waiters_.end(), Waiter{deadline, &condition, lock.mutex(), 0});
    changed_.notify_all();
  }
  condition.wait(lock, stop, [&] { return ready() || now() >= deadline; });
  {
    std::unique_lock clock_lock(mutex_);
    if (self->being_notified > 0) {
      // advance() holds pointers to our condition and mutex and needs the mutex to notify.
      lock.unlock();
      changed_.wait(clock_lock, [&] { return self->being_notified == 0; });
      waiters_.erase(self);
      changed_.notify_all();
      clock_lock.unlock();
      lock.lock();
    } else {
      waiters_.erase(self);
      changed_.notify_all();
    }
  }
  return ready();
}

void FakeClock::advance(base::Duration by) {
  std::unique_lock clock_lock(mutex_);
  advance_to(now_ + std::max(by, base::Duration::zero()), clock_lock);
}

void FakeClock::advance_to(base::TimePoint time, std::unique_lock<std::mutex>& clock_lock) const {
  now_ = std::max(now_, time);
  std::vector<Waiter*> due;
  for (auto& waiter : waiters_) {
    if (waiter.deadline > now_) continue;
    ++waiter.being_notified;
    due.push_back(&waiter);
  }
  if (due.empty()) return;
  // Never hold the clock's mutex while taking a waiter's: waiters call now() with theirs held.
  clock_lock.unlock();
  for (Waiter* waiter : due) {
    // Between checking its deadline and blocking, a waiter holds its mutex: taking it here means
    // the waiter is either blocked (and gets the notification) or has not checked yet (and sees
    // the new time).
    std::lock_guard waiter_lock(*waiter->mutex);
    waiter->condition->notify_all();
  }
  clock_lock.lock();
  for (Waiter* waiter : due) --waiter->being_notified;
  changed_.notify_all();
}

void FakeClock::set_auto_advance(bool enabled) {
  std::lock_guard lock(mutex_);
  auto_advance_ = enabled;
}

std::size_t FakeClock::waiters() const {
  std::lock_guard lock(mutex_);
  return waiters_.size();
}

std::vector<base::TimePoint> FakeClock::deadlines() const {
  std::lock_guard lock(mutex_);
  std::vector<base::TimePoint> result;
  for (const auto& waiter : waiters_) result.push_back(waiter.deadline);
  std::sort(result.begin(), result.end());
  return result;
}

bool FakeClock::await_waiters(std::size_t count, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] { return waiters_.size() >= count; });
}

bool FakeClock::await_deadline(base::TimePoint deadline, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] {
    return std::any_of(waiters_.begin(), waiters_.end(),
                       [&](const Waiter& waiter) { return waiter.deadline == deadline; });
  });
}

}  // namespace myop::testing
