// Jittered exponential backoff as a small stateful policy: how long to wait before the next attempt of
// something that keeps failing (a watch reconnect, a relist).
//
// Attempt n (0-based since the last reset) waits
//     min(maximum, initial * multiplier^n) * (1 - jitter * u),   u uniform in [0, 1)
// so the wait never exceeds `maximum`, and clients that failed together (an API server restart) spread
// out instead of reconnecting in lockstep. The watch defaults are client-go's and kube-rs's: 0.8 s
// doubling to 30 s. Not thread-safe: one per watch.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace myop::kube {

struct BackoffSettings {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds maximum{30'000};
  double multiplier = 2.0;
  double jitter = 0.2;  // fraction taken off at random: 0 = none, 1 = anywhere down to zero
};

class Backoff {
 public:
  // Seeded from std::random_device.
  explicit Backoff(BackoffSettings settings = {});
  // Deterministic sequence for tests.
  Backoff(BackoffSettings settings, std::uint64_t seed);

  // The wait before the next attempt; each call counts one more failure.
  std::chrono::milliseconds next_delay();

  // Back to `initial` after a success.
  void reset() { failures_ = 0; }

  int failures() const { return failures_; }
  const BackoffSettings& settings() const { return settings_; }

  // The wait before attempt `failures` without jitter (exposed for tests and metrics).
  std::chrono::milliseconds ceiling(int failures) const;

 private:
  BackoffSettings settings_;
  std::mt19937_64 random_;
  int failures_ = 0;
};

}  // namespace myop::kube
