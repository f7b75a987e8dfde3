#pragma once
// The OTLP/HTTP JSON body of an ExportTraceServiceRequest (opentelemetry-proto's protobuf JSON
// mapping, with OTLP's own rules): one resourceSpans (the process: service.name, service.version),
// one scopeSpans (this module), the spans. Trace and span ids are hex strings, not base64; times are
// unix nanoseconds as decimal strings; enums are their integer values; 64-bit integers are strings.
#include <string>
#include <vector>

#include "trace/span_data.h"

namespace myop::trace {

struct ResourceInfo {
  std::string service_name = "my-operator";
  std::string service_version;  // empty: not sent
};

std::string encode_otlp_json(const std::vector<SpanData>& spans, const ResourceInfo& resource);

}  // namespace myop::trace
