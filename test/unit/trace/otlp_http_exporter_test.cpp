#include "trace/otlp_http_exporter.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "runtime/certificates/tls_certificate.h"
#include "runtime/certificates/tls_context_provider.h"
#include "runtime/http/http_server.h"

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
  // The URL's authority must be a host and a port the exporter can connect to.
  const ResourceInfo resource{"test-operator", "", "test-operator/trace"};
  CHECK(make_otlp_http_exporter({"http://[::1]:4318", 1s, resource}));
  CHECK(make_otlp_http_exporter({"https://collector.example", 1s, resource}));
  CHECK_THROWS_AS(make_otlp_http_exporter({"http://collector:99999", 1s, resource}), std::invalid_argument);
  CHECK_THROWS_AS(make_otlp_http_exporter({"http://collector:43a8", 1s, resource}), std::invalid_argument);
  CHECK_THROWS_AS(make_otlp_http_exporter({"http://user:pw@collector:4318", 1s, resource}),
                  std::invalid_argument);
  CHECK_THROWS_AS(make_otlp_http_exporter({"http://[::1:4318", 1s, resource}), std::invalid_argument);
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

namespace {

// A collector on 127.0.0.1 (our HTTP server): answers POST /v1/traces with `status` and keeps what
// it was sent.
struct Collector {
  myop::runtime::HttpServer server{"collector"};
  std::atomic<unsigned> status{200};
  std::mutex mutex;
  std::vector<myop::runtime::HttpRequest> received;

  explicit Collector(std::shared_ptr<myop::runtime::TlsContextProvider> tls = nullptr) {
    if (tls) server.serve_tls(std::move(tls));
    server.handle_post("/v1/traces", [this](const myop::runtime::HttpRequest& request) {
      std::lock_guard lock(mutex);
      received.push_back(request);
      return myop::runtime::HttpResponse{status.load(), "application/json", "{}"};
    });
    REQUIRE(server.start("127.0.0.1:0").ok());
  }
  ~Collector() { server.stop(); }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  std::size_t count() {
    std::lock_guard lock(mutex);
    return received.size();
  }
};

OtlpHttpOptions options_for(const std::string& endpoint) {
  OtlpHttpOptions options;
  options.resource = {"test-operator", "", "test-operator/trace"};
  options.endpoint = endpoint;
  options.timeout = 10s;
  return options;
}

}  // namespace

TEST_CASE(
    "OTLP/HTTP exporter: spans are POSTed as OTLP JSON, 2xx is success, 429/502/503/504 retryable, "
    "other answers permanent",
    "[trace][otlp][exporter]") {
  Collector collector;
  auto exporter =
      make_otlp_http_exporter(options_for("http://127.0.0.1:" + std::to_string(collector.server.port())));
  CHECK(exporter->export_spans({a_span()}) == ExportResult::success);
  REQUIRE(collector.count() == 1);
  {
    std::lock_guard lock(collector.mutex);
    const auto& request = collector.received.front();
    CHECK(request.method == "POST");
    CHECK(request.content_type == "application/json");
    CHECK_THAT(request.body, Catch::Contains(R"("name":"reconcile")"));
    CHECK_THAT(request.body, Catch::Contains(R"("stringValue":"test-operator")"));
  }
  for (const unsigned status : {429U, 502U, 503U, 504U}) {
    collector.status = status;
    CHECK(exporter->export_spans({a_span()}) == ExportResult::retryable_failure);
  }
  for (const unsigned status : {400U, 404U, 500U}) {
    collector.status = status;
    CHECK(exporter->export_spans({a_span()}) == ExportResult::permanent_failure);
  }
  collector.status = 202;
  CHECK(exporter->export_spans({a_span()}) == ExportResult::success);
  CHECK(collector.count() == 9);
}

TEST_CASE("OTLP/HTTP exporter over https: the collector's certificate is verified against the trust store",
          "[trace][otlp][exporter][tls]") {
  auto pair = myop::runtime::generate_self_signed_certificate({"localhost", "127.0.0.1"});
  REQUIRE(pair.ok());
  auto context = myop::runtime::make_server_tls_context(*pair);
  REQUIRE(context.ok());
  Collector collector(std::make_shared<myop::runtime::FixedTlsContextProvider>(*context));
  const std::string url = "https://127.0.0.1:" + std::to_string(collector.server.port());

  // A certificate made a moment ago is in no system trust store: no handshake, nothing sent.
  auto refused = make_otlp_http_exporter(options_for(url));
  CHECK(refused->export_spans({a_span()}) == ExportResult::retryable_failure);
  CHECK(collector.count() == 0);

  // Trusted (OpenSSL reads SSL_CERT_FILE as the system store when the exporter is made): delivered.
  const std::string trusting = std::filesystem::temp_directory_path() / "otlp-test-trust.pem";
  std::ofstream(trusting) << pair->certificate_pem;
  ::setenv("SSL_CERT_FILE", trusting.c_str(), 1);
  auto trusted = make_otlp_http_exporter(options_for(url));
  ::unsetenv("SSL_CERT_FILE");
  std::filesystem::remove(trusting);
  CHECK(trusted->export_spans({a_span()}) == ExportResult::success);
  CHECK(collector.count() == 1);
}

TEST_CASE("OTLP/HTTP exporter: an export that hangs ends at its deadline", "[trace][otlp][exporter]") {
  SilentListener collector;
  auto options = options_for("http://127.0.0.1:" + std::to_string(collector.port()));
  options.timeout = 300ms;
  auto exporter = make_otlp_http_exporter(options);
  CHECK(exporter->export_spans({a_span()}) == ExportResult::retryable_failure);
}
