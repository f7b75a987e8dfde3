// A rate limit: `qps` tokens per second, at most `burst` saved up. Same model as client-go's
// flowcontrol.NewTokenBucketRateLimiter (golang.org/x/time/rate): each request reserves one token and
// waits until the bucket would have had it, so callers are served in arrival order and a burst drains
// evenly instead of stampeding. Time comes from the injected clock.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <stop_token>

#include "base/clock.h"

namespace myop::base {

class TokenBucket {
 public:
  // qps <= 0 means "no limit". The bucket starts full at the clock's now().
  TokenBucket(double qps, int burst, std::shared_ptr<const Clock> clock = system_clock())
      : clock_(clock != nullptr ? std::move(clock) : std::shared_ptr<const Clock>(system_clock())),
        qps_(qps),
        burst_(std::max(1, burst)),
        tokens_(static_cast<double>(std::max(1, burst))),
        last_(clock_->now()) {}

  // Takes one token at `now` and returns how long the caller must wait before using it (zero when a
  // token was available). Pure bookkeeping, no waiting.
  Duration reserve(TimePoint now) {
    std::lock_guard lock(mutex_);
    if (qps_ <= 0) return Duration::zero();
    refill(now);
    tokens_ -= 1.0;
    if (tokens_ >= 0) return Duration::zero();
    return wait_for_tokens(-tokens_);
  }

  // Gives back a token taken by reserve() whose request is not going to be sent (the caller gave up).
  void cancel_reservation() {
    std::lock_guard lock(mutex_);
    if (qps_ > 0) tokens_ = std::min(static_cast<double>(burst_), tokens_ + 1.0);
  }

  // How long from `now` until a token is free, without taking one.
  Duration time_until_available(TimePoint now) {
    std::lock_guard lock(mutex_);
    if (qps_ <= 0) return Duration::zero();
    refill(now);
    return tokens_ >= 1.0 ? Duration::zero() : wait_for_tokens(1.0 - tokens_);
  }

  // Blocks until a token is ours. Returns false, giving the token back, when `stop` is requested or
  // when the wait would pass `deadline`.
  bool acquire(std::stop_token stop = {}, TimePoint deadline = TimePoint::max()) {
    const TimePoint now = clock_->now();
    const Duration wait = reserve(now);
    if (wait == Duration::zero()) return true;
    if (deadline != TimePoint::max() && now + wait > deadline) {
      cancel_reservation();
      return false;
    }
    if (!clock_->sleep_until(std::move(stop), now + wait)) {
      cancel_reservation();
      return false;
    }
    return true;
  }

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill(TimePoint now) {
    if (now <= last_) return;
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
    last_ = now;
  }

  Duration wait_for_tokens(double missing) const {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(missing / qps_));
  }

  const std::shared_ptr<const Clock> clock_;
  std::mutex mutex_;
  const double qps_;
  const int burst_;
  double tokens_;
  TimePoint last_;
};

}  // namespace myop::base
