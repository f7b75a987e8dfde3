#include "runtime/cache/watch_health.h"

#include <chrono>

namespace myop::runtime {

bool WatchHealth::failed(const kube::Error& error, TimePoint now) {
  if (kube::is_gone(error)) return false;
  last_error_ = error.to_string();
  if (failures_++ == 0) first_failure_ = now;
  if (failing_ || failures_ < kFailuresInARow) return false;
  failing_ = true;
  return true;
}

bool WatchHealth::progressed() {
  failures_ = 0;
  const bool recovered = failing_;
  failing_ = false;
  return recovered;
}

base::Result<void, std::string> WatchHealth::health(TimePoint now) const {
  if (!failing_) return {};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - first_failure_).count();
  return base::fail(std::to_string(failures_) + " attempts in a row failed over " + std::to_string(seconds) +
                    " s; the last: " + last_error_);
}

}  // namespace myop::runtime
