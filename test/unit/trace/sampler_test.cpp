#include "trace/sampler.h"

#include <catch2/catch.hpp>

using namespace myop::trace;

namespace {

// A trace id whose last 8 bytes (the part the sampler reads) are `low`.
TraceId trace_id_with_low(std::uint64_t low) {
  TraceId id;
  id.bytes[0] = 1;
  for (int i = 15; i >= 8; --i, low >>= 8)
    id.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(low);
  return id;
}

}  // namespace

TEST_CASE("sampler: ratio 1 records every root, ratio 0 none", "[trace][sampler]") {
  const RatioSampler all(1.0);
  const RatioSampler none(0.0);
  for (int i = 0; i < 1000; ++i) {
    const TraceId id = new_trace_id();
    CHECK(all.should_sample(id, nullptr));
    CHECK_FALSE(none.should_sample(id, nullptr));
  }
  CHECK(RatioSampler(7.0).ratio() == 1.0);
  CHECK(RatioSampler(-1.0).ratio() == 0.0);
}

TEST_CASE("sampler: a root is sampled when its trace id's low 63 bits fall below ratio * 2^63",
          "[trace][sampler]") {
  const RatioSampler quarter(0.25);
  // The bound is 2^61 on the id's last 8 bytes shifted right once: below 2^62 before the shift.
  CHECK(quarter.should_sample(trace_id_with_low(0), nullptr));
  CHECK(quarter.should_sample(trace_id_with_low((std::uint64_t{1} << 62) - 2), nullptr));
  CHECK_FALSE(quarter.should_sample(trace_id_with_low(std::uint64_t{1} << 62), nullptr));
  CHECK_FALSE(quarter.should_sample(trace_id_with_low(UINT64_MAX), nullptr));
  // The same id decides the same way every time (any process at the same ratio agrees).
  const TraceId id = new_trace_id();
  const bool first = quarter.should_sample(id, nullptr);
  for (int i = 0; i < 10; ++i) CHECK(quarter.should_sample(id, nullptr) == first);
}

TEST_CASE("sampler: random trace ids are sampled at about the ratio", "[trace][sampler]") {
  const RatioSampler quarter(0.25);
  constexpr int kTraces = 20000;
  int sampled = 0;
  for (int i = 0; i < kTraces; ++i) sampled += quarter.should_sample(new_trace_id(), nullptr) ? 1 : 0;
  // The standard deviation is 0.003 at this count; +-0.03 is ten of them.
  const double share = static_cast<double>(sampled) / kTraces;
  CHECK(share > 0.22);
  CHECK(share < 0.28);
}

TEST_CASE("sampler: a child follows its parent's decision whatever the ratio", "[trace][sampler]") {
  SpanContext parent;
  parent.trace_id = trace_id_with_low(UINT64_MAX);  // never sampled as a root below ratio 1
  parent.span_id = new_span_id();
  parent.sampled = true;
  CHECK(RatioSampler(0.0).should_sample(parent.trace_id, &parent));
  parent.sampled = false;
  parent.trace_id = trace_id_with_low(0);  // always sampled as a root above ratio 0
  CHECK_FALSE(RatioSampler(1.0).should_sample(parent.trace_id, &parent));
}
