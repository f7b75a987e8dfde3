#include "trace/otlp_http_exporter.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

using namespace myop::trace;
using namespace std::chrono_literals;

namespace {

// A TCP socket on 127.0.0.1 listening on a port of its own. The kernel completes connections to it
// without accept(), so a client's request is sent and never answered: a collector that hangs.
class SilentListener {
 public:
  SilentListener() {
    socket_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(socket_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(socket_, 16);
    socklen_t length = sizeof address;
    ::getsockname(socket_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() {
    if (accepted_ >= 0) ::close(accepted_);
    ::close(socket_);
  }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  int port() const { return port_; }
  // Blocks until a client connected: the witness that an export is in flight.
  void accept_one() { accepted_ = ::accept(socket_, nullptr, nullptr); }

 private:
  int socket_ = -1;
  int accepted_ = -1;
  int port_ = 0;
};

// A port nothing listens on (bound once to learn a free one, then closed): connections are refused.
int closed_port() {
  const SilentListener listener;
  return listener.port();
}

SpanData a_span() {
  SpanData span;
  span.trace_id = new_trace_id();
  span.span_id = new_span_id();
  span.name = "reconcile";
  return span;
}

}  // namespace

TEST_CASE("OTLP/HTTP endpoint: /v1/traces appended to a base URL and not a URL is refused", "[trace][otlp]") {
  CHECK(otlp_traces_url("http://collector:4318") == "http://collector:4318/v1/traces");
  CHECK(otlp_traces_url("http://collector:4318/") == "http://collector:4318/v1/traces");
  CHECK(otlp_traces_url("https://collector.example/otlp") == "https://collector.example/otlp/v1/traces");
  CHECK(otlp_traces_url("http://collector:4318/v1/traces") == "http://collector:4318/v1/traces");
  CHECK_FALSE(otlp_traces_url("collector:4318"));
  CHECK_FALSE(otlp_traces_url("grpc://collector:4317"));
  CHECK_FALSE(otlp_traces_url("http://"));
  CHECK_FALSE(otlp_traces_url("http:///v1/traces"));
  CHECK_THROWS_AS(make_otlp_http_exporter({"collector:4318", 1s, {}}), std::invalid_argument);
}

TEST_CASE("OTLP/HTTP exporter: a collector that is down costs spans, counted, never the caller's time",
          "[trace][otlp][exporter]") {
  OtlpHttpOptions exporter_options;
  exporter_options.resource = {"test-operator", "", "test-operator/trace"};
  exporter_options.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  exporter_options.timeout = 2s;
  BatchOptions options;
  options.max_export_batch_size = 10;
  options.retry_delay = 1ms;
  BatchSpanProcessor processor(make_otlp_http_exporter(exporter_options), options, nullptr);
  for (int i = 0; i < 30; ++i) processor.submit(a_span());
  processor.shutdown(30s);
  const BatchCounts counts = processor.counts();
  CHECK(counts.exported == 0);
  CHECK(counts.dropped_export_failed == 30);  // three batches, each refused twice
  CHECK(counts.dropped_queue_full == 0);
}

TEST_CASE("OTLP/HTTP exporter: while an export hangs, submitting returns and the overflow is counted",
          "[trace][otlp][exporter]") {
  SilentListener collector;
  OtlpHttpOptions exporter_options;
  exporter_options.resource = {"test-operator", "", "test-operator/trace"};
  exporter_options.endpoint = "http://127.0.0.1:" + std::to_string(collector.port());
  exporter_options.timeout = 10min;  // the export cannot end by itself during the test
  BatchOptions options;
  options.max_queue_size = 100;
  options.max_export_batch_size = 1;
  BatchSpanProcessor processor(make_otlp_http_exporter(exporter_options), options, nullptr);
  processor.submit(a_span());
  collector.accept_one();  // the export is in flight and will not be answered
  for (int i = 0; i < 1000; ++i) processor.submit(a_span());
  // Every submit returned while the export hung: nothing was exported or failed yet.
  BatchCounts counts = processor.counts();
  CHECK(counts.exported == 0);
  CHECK(counts.dropped_export_failed == 0);
  CHECK(counts.dropped_queue_full == 900);  // the queue holds 100; the thread holds the first
  // Shutdown with no wait cancels the hanging export.
  CHECK_FALSE(processor.shutdown(0ms));
  counts = processor.counts();
  CHECK(counts.exported == 0);
  CHECK(counts.dropped_queue_full + counts.dropped_shutdown + counts.dropped_export_failed == 1001);
}
