#include "runtime/backoff.h"

namespace myop::runtime {

Duration ExponentialBackoff::delay(int failures) const {
  if (failures <= 1) return std::min(base_, max_);
  Duration delay = base_;
  // Double step by step so a huge failure count cannot overflow the shift.
  for (int step = 1; step < failures; ++step) {
    if (delay >= max_ / 2) return max_;
    delay *= 2;
  }
  return std::min(delay, max_);
}

}  // namespace myop::runtime
