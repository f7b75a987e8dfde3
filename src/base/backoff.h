// The one backoff: how long to wait before the next attempt of something that keeps failing (a
// watch reconnect, a work-queue key, a request to the API server).
//
// The wait after a failure that `n` consecutive failures came before (0 for the first) is at most
//     ceiling(n) = min(maximum, initial * multiplier^n)
// and jitter, drawn as u uniform in [0, 1), spreads out clients that failed together (an API
// server restart) so they do not come back in lockstep:
//     down: ceiling(n) * (1 - jitter * u)   never above the ceiling
//     up:   ceiling(n) * (1 + jitter * u)   never below it (a server's Retry-After is a minimum)
//
// BackoffSchedule is the pure part (const, thread-safe): callers that keep their own failure
// counts (the work queue, per key) or their own randomness (the retry policy) use it directly.
// Backoff adds the small state of one thing that retries: its failure count and random draws.
#pragma once

#include <cstdint>
#include <functional>

#include "base/clock.h"

namespace myop::base {

enum class JitterDirection { down, up };

// The defaults are the watch reconnect's, as in client-go and kube-rs: 0.8 s doubling to 30 s,
// each wait up to 20 % shorter.
struct BackoffSettings {
  Duration initial = std::chrono::milliseconds(800);
  Duration maximum = std::chrono::seconds(30);
  double multiplier = 2.0;
  double jitter = 0.2;  // fraction of the ceiling: 0 = none, 1 = the most
  JitterDirection jitter_direction = JitterDirection::down;
};

// The same wait after every failure: no growth, no jitter.
inline BackoffSettings constant_backoff(Duration delay) {
  BackoffSettings settings;
  settings.initial = settings.maximum = delay;
  settings.multiplier = 1.0;
  settings.jitter = 0.0;
  return settings;
}

class BackoffSchedule {
 public:
  // Sanitizes: jitter within [0, 1], multiplier at least 1 (never shrinks), maximum at least initial.
  explicit BackoffSchedule(BackoffSettings settings = {});

  // The wait after a failure that `failures` consecutive failures came before, without jitter.
  Duration ceiling(int failures) const;
  // `ceiling` with jitter applied for `draw` in [0, 1).
  Duration jittered(Duration ceiling, double draw) const;
  Duration delay(int failures, double draw) const { return jittered(ceiling(failures), draw); }

  const BackoffSettings& settings() const { return settings_; }

 private:
  BackoffSettings settings_;
};

// Not thread-safe: one per thing that retries.
class Backoff {
 public:
  // Draws seeded from std::random_device.
  explicit Backoff(BackoffSettings settings = {});
  // The same sequence for the same seed.
  Backoff(BackoffSettings settings, std::uint64_t seed);
  // Draws from `random`, which returns values in [0, 1).
  Backoff(BackoffSettings settings, std::function<double()> random);

  // The wait before the next attempt; each call counts one more failure.
  Duration next_delay();
  // Back to `initial` after a success.
  void reset() { failures_ = 0; }

  int failures() const { return failures_; }
  Duration ceiling(int failures) const { return schedule_.ceiling(failures); }
  const BackoffSchedule& schedule() const { return schedule_; }
  const BackoffSettings& settings() const { return schedule_.settings(); }

 private:
  BackoffSchedule schedule_;
  std::function<double()> random_;
  int failures_ = 0;
};

}  // namespace myop::base
