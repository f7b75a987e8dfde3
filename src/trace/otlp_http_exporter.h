#pragma once
// OTLP over HTTP with the JSON encoding (POST <endpoint>/v1/traces, Content-Type application/json),
// on Boost.Beast: there is no OpenTelemetry C++ SDK among the packages we build with.
//
// Each export is one connection and one request with a deadline (`timeout`, resolving and connecting
// included), run on the calling thread (the batch processor's); cancel() ends one in flight. An
// https:// endpoint is verified against the system trust store (loaded once, when the exporter is
// made) and by its host name. A connection failure, a TLS failure,
// a timeout, 429, 502, 503 and 504 are retryable (the OTLP specification's list); any other non-2xx
// is permanent. The caller (BatchSpanProcessor) decides about retries and counts the losses; failures
// are logged at most once a minute so a collector that is down does not flood the log.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "trace/batch_processor.h"
#include "trace/otlp_json.h"

namespace myop::trace {

struct OtlpHttpOptions {
  // "http://collector:4318" (the OTLP/HTTP port): /v1/traces is appended, as OTEL_EXPORTER_OTLP_ENDPOINT;
  // a URL that already ends in /v1/traces is used as it is.
  std::string endpoint;
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  ResourceInfo resource;
};

// The URL spans are POSTed to, or nothing when `endpoint` is not an http:// or https:// URL with a host.
std::optional<std::string> otlp_traces_url(const std::string& endpoint);

// Throws std::invalid_argument when the endpoint is not usable (see otlp_traces_url).
std::shared_ptr<SpanExporter> make_otlp_http_exporter(OtlpHttpOptions options);

}  // namespace myop::trace
