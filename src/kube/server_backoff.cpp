#include "kube/server_backoff.h"

#include <algorithm>
#include <utility>

namespace myop::kube {

bool holds_for_server_backoff(std::string_view path) {
  return path.find("/apis/coordination.k8s.io/") == std::string_view::npos;
}

ServerBackoff::ServerBackoff(std::shared_ptr<const base::Clock> clock) : clock_(std::move(clock)) {}

void ServerBackoff::asked_to_wait(base::Duration wait) {
  const base::TimePoint until = clock_->now() + std::max(wait, base::Duration::zero());
  std::lock_guard lock(mutex_);
  until_ = std::max(until_, until);
}

base::Duration ServerBackoff::remaining() const {
  const base::TimePoint now = clock_->now();
  std::lock_guard lock(mutex_);
  return std::max(until_ - now, base::Duration::zero());
}

}  // namespace myop::kube
