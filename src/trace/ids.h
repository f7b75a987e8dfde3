#pragma once
// Trace and span identifiers and the W3C Trace Context `traceparent` header that carries them:
//
//   traceparent: 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>
//
// An all-zero trace id or span id is invalid (the W3C rule), so a zero id also means "none" here:
// a root span's parent span id is zero. Only flag bit 0 (sampled) is defined.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace myop::trace {

struct TraceId {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const;
  std::string hex() const;  // 32 lowercase hex digits
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

struct SpanId {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const;
  std::string hex() const;  // 16 lowercase hex digits
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

// Random, never zero; from a per-thread generator seeded by std::random_device.
TraceId new_trace_id();
SpanId new_span_id();

// What crosses a process or thread boundary: which trace, which span is the parent, sampled or not.
struct SpanContext {
  TraceId trace_id;
  SpanId span_id;
  bool sampled = false;
  bool valid() const { return trace_id.valid() && span_id.valid(); }
};

std::string format_traceparent(const SpanContext& context);
// Version 00 exactly as the W3C grammar has it; a later version is read by its first four fields, as
// the specification asks. Nothing (not an error) on anything malformed or carrying a zero id.
std::optional<SpanContext> parse_traceparent(std::string_view header);

}  // namespace myop::trace
