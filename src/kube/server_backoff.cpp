#include "kube/server_backoff.h"

#include <algorithm>
#include <utility>

namespace myop::kube {

bool holds_for_server_backoff(std::string_view path) {
  return path.find("/apis/coordination.k8s.io/") == std::string_view::npos;
}

ServerBackoff::ServerBackoff(std::shared_ptr<const base::Clock> clock, double jitter)
    : clock_(std::move(clock)), jitter_(std::max(jitter, 0.0)) {}

void ServerBackoff::asked_to_wait(base::Duration wait) {
  wait = std::max(wait, base::Duration::zero());
  const base::TimePoint until = clock_->now() + wait;
  std::lock_guard lock(mutex_);
  if (until <= until_) return;
  until_ = until;
  spread_ = std::chrono::duration_cast<base::Duration>(wait * jitter_);
}

base::Duration ServerBackoff::remaining() const {
  const base::TimePoint now = clock_->now();
  std::lock_guard lock(mutex_);
  return std::max(until_ - now, base::Duration::zero());
}

base::Duration ServerBackoff::hold(double random_unit) const {
  const base::TimePoint now = clock_->now();
  std::lock_guard lock(mutex_);
  if (until_ <= now) return base::Duration::zero();
  return until_ - now +
         std::chrono::duration_cast<base::Duration>(spread_ * std::clamp(random_unit, 0.0, 1.0));
}

}  // namespace myop::kube
