#include "runtime/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace myop::runtime {

TokenBucket::TokenBucket(double rate_per_second, double burst, TimePoint now)
    : rate_per_second_(rate_per_second), burst_(std::max(1.0, burst)), tokens_(burst_), last_refill_(now) {}

void TokenBucket::refill(TimePoint now) {
  if (now <= last_refill_) return;
  tokens_ = std::min(burst_, tokens_ + to_seconds(now - last_refill_) * rate_per_second_);
  last_refill_ = now;
}

bool TokenBucket::try_acquire(TimePoint now) {
  refill(now);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

TimePoint TokenBucket::next_available(TimePoint now) {
  refill(now);
  if (tokens_ >= 1.0 || rate_per_second_ <= 0) return now;
  const double missing_seconds = (1.0 - tokens_) / rate_per_second_;
  return now + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(missing_seconds)) +
         Duration(1);
}

}  // namespace myop::runtime
