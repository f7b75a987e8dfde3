// A client-side rate limit: `qps` tokens per second, at most `burst` saved up. Same model as client-go's
// flowcontrol.NewTokenBucketRateLimiter (golang.org/x/time/rate): each request reserves one token and
// waits until the bucket would have had it, so callers are served in arrival order and a burst drains
// evenly instead of stampeding.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace myop::kube {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // qps <= 0 means "no limit".
  TokenBucket(double qps, int burst, Clock::time_point now = Clock::now())
      : qps_(qps), burst_(std::max(1, burst)), tokens_(static_cast<double>(std::max(1, burst))), last_(now) {}

  // Takes one token at `now` and returns how long the caller must wait before using it (zero when a
  // token was available). Pure bookkeeping, no sleeping: this is what the unit tests drive.
  Clock::duration reserve(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    if (qps_ <= 0) return Clock::duration::zero();
    refill(now);
    tokens_ -= 1.0;
    if (tokens_ >= 0) return Clock::duration::zero();
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / qps_));
  }

  // Gives back a token taken by reserve() whose request is not going to be sent (the caller gave up).
  void cancel_reservation() {
    std::lock_guard lock(mutex_);
    if (qps_ > 0) tokens_ = std::min(static_cast<double>(burst_), tokens_ + 1.0);
  }

  // Blocks until a token is ours. Returns false, giving the token back, when `stop` is requested or
  // when the wait would pass `deadline`.
  bool acquire(std::stop_token stop = {}, Clock::time_point deadline = Clock::time_point::max()) {
    const auto now = Clock::now();
    const auto wait = reserve(now);
    if (wait == Clock::duration::zero()) return true;
    if (deadline != Clock::time_point::max() && now + wait > deadline) {
      cancel_reservation();
      return false;
    }
    std::mutex sleep_mutex;
    std::condition_variable_any sleeper;
    std::unique_lock lock(sleep_mutex);
    const bool stopped = sleeper.wait_until(lock, stop, now + wait, [] { return false; });
    (void)stopped;
    if (stop.stop_requested()) {
      cancel_reservation();
      return false;
    }
    return true;
  }

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill(Clock::time_point now) {
    if (now <= last_) return;
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
    last_ = now;
  }

  std::mutex mutex_;
  const double qps_;
  const int burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace myop::kube
