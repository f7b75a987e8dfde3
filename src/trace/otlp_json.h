#pragma once
// The OTLP/HTTP JSON body of an ExportTraceServiceRequest (opentelemetry-proto's protobuf JSON
// mapping, with OTLP's own rules): one resourceSpans (the process: service.name, service.version),
// one scopeSpans (the tracer: its instrumentation scope name), the spans. Trace and span ids are hex strings,
// not base64; times are unix nanoseconds as decimal strings; enums are their integer values; 64-bit integers
// are strings.
#include <string>
#include <vector>

#include "trace/span_data.h"

namespace myop::trace {

// Who sends the spans. The names are the program's (trace/ knows no product); make_otlp_http_exporter
// refuses empty ones.
struct ResourceInfo {
  std::string service_name;     // service.name, e.g. "my-operator"
  std::string service_version;  // empty: not sent
  std::string scope_name;       // the instrumentation scope (the tracer's name), e.g. "my-operator/trace"
};

std::string encode_otlp_json(const std::vector<SpanData>& spans, const ResourceInfo& resource);

}  // namespace myop::trace
