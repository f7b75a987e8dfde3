#include "trace/sampler.h"

#include <algorithm>

namespace myop::trace {

RatioSampler::RatioSampler(double ratio) : ratio_(std::clamp(ratio, 0.0, 1.0)), bound_(0) {
  // As the OpenTelemetry Go SDK: bound = ratio * 2^63, compared with the id's last 8 bytes >> 1.
  constexpr double kTwoToThe63 = 9223372036854775808.0;
  bound_ = ratio_ >= 1.0 ? UINT64_MAX : static_cast<std::uint64_t>(ratio_ * kTwoToThe63);
}

bool RatioSampler::should_sample(const TraceId& trace_id, const SpanContext* parent) const {
  if (parent != nullptr && parent->valid()) return parent->sampled;
  if (ratio_ >= 1.0) return true;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = (low << 8) | trace_id.bytes[i];
  return (low >> 1) < bound_;
}

}  // namespace myop::trace
