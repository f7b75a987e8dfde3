#pragma once
// Which traces are recorded: OpenTelemetry's ParentBased(TraceIdRatioBased(ratio)).
//
// A span with a parent follows the parent's sampled flag, so a trace is recorded whole or not at all.
// A root span is sampled when its trace id falls below ratio * 2^63, read from the id's last 8 bytes
// as the OpenTelemetry SDKs do: the decision is a function of the trace id alone, so any process that
// sees the same id at the same ratio decides the same way, and no random number is drawn.
#include <cstdint>

#include "trace/ids.h"

namespace myop::trace {

class RatioSampler {
 public:
  // ratio is clamped to [0, 1]: 0 records nothing, 1 everything.
  explicit RatioSampler(double ratio);
  bool should_sample(const TraceId& trace_id, const SpanContext* parent) const;
  double ratio() const { return ratio_; }

 private:
  double ratio_;
  std::uint64_t bound_;  // sampled when the id's last 8 bytes, shifted right once, are below it
};

}  // namespace myop::trace
