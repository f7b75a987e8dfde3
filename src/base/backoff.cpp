#include "base/backoff.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace myop::base {
namespace {

// Far beyond the point where any ceiling stops growing; keeps the count from overflowing.
constexpr int kFailuresCountedAtMost = 1'000'000;

std::function<double()> seeded_draws(std::uint64_t seed) {
  return [generator = std::mt19937_64(seed)]() mutable {
    return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
  };
}

}  // namespace

BackoffSchedule::BackoffSchedule(BackoffSettings settings) : settings_(settings) {
  settings_.initial = std::max(settings_.initial, Duration::zero());
  settings_.maximum = std::max(settings_.maximum, settings_.initial);
  settings_.multiplier = std::max(settings_.multiplier, 1.0);
  settings_.jitter = std::clamp(settings_.jitter, 0.0, 1.0);
}

Duration BackoffSchedule::ceiling(int failures) const {
  if (settings_.initial == Duration::zero()) return Duration::zero();
  const auto initial = static_cast<double>(settings_.initial.count());
  const auto maximum = static_cast<double>(settings_.maximum.count());
  // pow overflows to inf for large counts, which is past the maximum too.
  const double grown = initial * std::pow(settings_.multiplier, std::max(failures, 0));
  if (grown >= maximum) return settings_.maximum;
  return Duration(static_cast<Duration::rep>(grown));
}

Duration BackoffSchedule::jittered(Duration ceiling, double draw) const {
  const double spread = settings_.jitter * std::clamp(draw, 0.0, 1.0);
  const double factor = settings_.jitter_direction == JitterDirection::down ? 1.0 - spread : 1.0 + spread;
  const double scaled = static_cast<double>(ceiling.count()) * factor;
  if (scaled >= static_cast<double>(Duration::max().count())) return Duration::max();
  return Duration(static_cast<Duration::rep>(std::llround(scaled)));
}

Backoff::Backoff(BackoffSettings settings) : Backoff(settings, std::uint64_t{std::random_device{}()}) {}

Backoff::Backoff(BackoffSettings settings, std::uint64_t seed) : Backoff(settings, seeded_draws(seed)) {}

Backoff::Backoff(BackoffSettings settings, std::function<double()> random)
    : schedule_(settings), random_(random ? std::move(random) : seeded_draws(std::random_device{}())) {}

Duration Backoff::next_delay() {
  const Duration ceiling = schedule_.ceiling(failures_);
  if (failures_ < kFailuresCountedAtMost) ++failures_;
  // No draw without jitter: a deterministic schedule stays independent of the generator.
  return schedule_.jittered(ceiling, settings().jitter > 0 ? random_() : 0.0);
}

}  // namespace myop::base
