#pragma once
// Exponential per-failure delay: base * 2^(failures-1), capped. Pure; the work queue keeps the
// failure counts so that only real failures (not duplicate triggers) move a key up the schedule.
#include <chrono>

#include "runtime/clock.h"

namespace myop::runtime {

class ExponentialBackoff {
 public:
  ExponentialBackoff(Duration base = std::chrono::milliseconds(5), Duration max = std::chrono::seconds(1000))
      : base_(base), max_(max) {}

  // Delay before the retry that follows the `failures`-th consecutive failure (failures >= 1).
  Duration delay(int failures) const;

  Duration base() const { return base_; }
  Duration max() const { return max_; }

 private:
  Duration base_;
  Duration max_;
};

}  // namespace myop::runtime
