#include "kube/backoff.h"

#include <algorithm>
#include <cmath>

namespace myop::kube {

Backoff::Backoff(BackoffSettings settings) : Backoff(settings, std::random_device{}()) {}

Backoff::Backoff(BackoffSettings settings, std::uint64_t seed) : settings_(settings), random_(seed) {
  settings_.jitter = std::clamp(settings_.jitter, 0.0, 1.0);
  settings_.multiplier = std::max(settings_.multiplier, 1.0);
  settings_.maximum = std::max(settings_.maximum, settings_.initial);
}

std::chrono::milliseconds Backoff::ceiling(int failures) const {
  const double initial = static_cast<double>(settings_.initial.count());
  const double maximum = static_cast<double>(settings_.maximum.count());
  // pow overflows to inf for large counts, which min() turns into the maximum.
  const double grown = initial * std::pow(settings_.multiplier, std::max(failures, 0));
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(grown, maximum)));
}

std::chrono::milliseconds Backoff::next_delay() {
  const double ceiling_milliseconds = static_cast<double>(ceiling(failures_).count());
  if (failures_ < 1'000'000) ++failures_;  // far beyond the point where the ceiling stops growing
  const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(std::llround(ceiling_milliseconds * (1.0 - settings_.jitter * draw))));
}

}  // namespace myop::kube
