#pragma once
// Overall token bucket for the work queue: at most `burst` hand-outs at once, refilled at `rate`
// per second. Driven by an explicit time argument so it needs no clock of its own.
// (kube/ had no token bucket when this was written; if one appears, fold the two together.)
#include "runtime/clock.h"

namespace myop::runtime {

class TokenBucket {
 public:
  TokenBucket(double rate_per_second, double burst, TimePoint now);

  // Takes one token if available.
  bool try_acquire(TimePoint now);
  // Earliest time a token will be available (now if one is).
  TimePoint next_available(TimePoint now);

 private:
  void refill(TimePoint now);

  double rate_per_second_;
  double burst_;
  double tokens_;
  TimePoint last_refill_;
};

}  // namespace myop::runtime
