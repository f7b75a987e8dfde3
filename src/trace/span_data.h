#pragma once
// A finished span as the exporter sends it: OpenTelemetry's data model, without events or links
// (nothing here records them).
#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "trace/ids.h"

namespace myop::trace {

enum class SpanKind { internal, server, client, producer, consumer };

// OpenTelemetry's status: unset unless something decided; error carries a message.
enum class StatusCode { unset, ok, error };

using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

struct SpanData {
  TraceId trace_id;
  SpanId span_id;
  SpanId parent_span_id;  // zero: a root span
  std::string name;
  SpanKind kind = SpanKind::internal;
  std::chrono::system_clock::time_point start{};
  std::chrono::system_clock::time_point end{};
  std::vector<Attribute> attributes;
  StatusCode status = StatusCode::unset;
  std::string status_message;
};

}  // namespace myop::trace
