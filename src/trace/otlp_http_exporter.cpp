#include "trace/otlp_http_exporter.h"

// cpprestsdk's U() macro breaks fmt's templates (spdlog) that come after it; we do not use it.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier)
#include <cpprest/http_client.h>
#include <pplx/threadpool.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <stdexcept>

namespace myop::trace {
namespace {

class OtlpHttpExporter final : public SpanExporter {
 public:
  OtlpHttpExporter(const std::string& url, OtlpHttpOptions options)
      : options_(std::move(options)), client_(utility::conversions::to_string_t(url), client_config()) {}

  ExportResult export_spans(const std::vector<SpanData>& spans) override {
    web::http::http_request request(web::http::methods::POST);
    // As bytes: set_body(std::string) reads the string through a streambuf<char> cast to
    // streambuf<unsigned char> inside cpprestsdk, which UBSan reports (vptr); a byte vector is read as
    // what it is.
    const std::string body = encode_otlp_json(spans, options_.resource);
    request.headers().set_content_type("application/json");
    request.set_body(std::vector<unsigned char>(body.begin(), body.end()));
    pplx::cancellation_token token = pplx::cancellation_token::none();
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return ExportResult::permanent_failure;
      token = cancellation_.get_token();
    }
    try {
      // Blocking here is fine: this runs on the batch processor's own thread, not on cpprestsdk's pool.
      web::http::http_response response = client_.request(request, token).get();
      const auto status = response.status_code();
      // Drain the body so the connection can be reused; OTLP's partial-success answer is not acted on.
      response.content_ready().wait();
      if (status >= 200 && status < 300) return ExportResult::success;
      const bool retryable = status == 429 || status == 502 || status == 503 || status == 504;
      report_failure("the collector answered HTTP " + std::to_string(status));
      return retryable ? ExportResult::retryable_failure : ExportResult::permanent_failure;
    } catch (const std::exception& error) {
      report_failure(error.what());
      return ExportResult::retryable_failure;
    }
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    cancellation_.cancel();
  }

 private:
  web::http::client::http_client_config client_config() const {
    web::http::client::http_client_config config;
    config.set_timeout(options_.timeout);
    return config;
  }

  void report_failure(const std::string& reason) {
    const auto now = std::chrono::steady_clock::now();
    if (last_report_ && now - *last_report_ < std::chrono::minutes(1)) return;
    last_report_ = now;
    spdlog::warn(
        "cannot export trace spans to {}: {} (their spans are dropped and counted in "
        "myoperator_trace_spans_dropped_total; reported at most once a minute)",
        options_.endpoint, reason);
  }

  const OtlpHttpOptions options_;
  web::http::client::http_client client_;
  std::optional<std::chrono::steady_clock::time_point> last_report_;  // the export thread's only
  std::mutex mutex_;
  pplx::cancellation_token_source cancellation_;
  bool cancelled_ = false;
};

}  // namespace

std::optional<std::string> otlp_traces_url(const std::string& endpoint) {
  const auto scheme_end = endpoint.find("://");
  if (scheme_end == std::string::npos) return std::nullopt;
  const std::string scheme = endpoint.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return std::nullopt;
  const std::string rest = endpoint.substr(scheme_end + 3);
  const auto host_end = rest.find_first_of("/?#");
  if (rest.empty() || host_end == 0 || rest.find_first_of(" \t") != std::string::npos) return std::nullopt;
  std::string url = endpoint;
  constexpr std::string_view kPath = "/v1/traces";
  if (url.size() >= kPath.size() && url.compare(url.size() - kPath.size(), kPath.size(), kPath) == 0)
    return url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + std::string(kPath);
}

std::shared_ptr<SpanExporter> make_otlp_http_exporter(OtlpHttpOptions options) {
  auto url = otlp_traces_url(options.endpoint);
  if (!url)
    throw std::invalid_argument("'" + options.endpoint +
                                "' is not an OTLP/HTTP endpoint such as http://otel-collector:4318");
  if (options.resource.service_name.empty() || options.resource.scope_name.empty())
    throw std::invalid_argument(
        "OtlpHttpOptions: resource.service_name and resource.scope_name are required");
  // cpprestsdk's shared pool (nothing else in the process uses it) would start 40 threads on first
  // use; one export at a time needs two. It can be sized only before that first use, hence once.
  static std::once_flag pool_sized;
  std::call_once(pool_sized, [] {
    try {
      crossplat::threadpool::initialize_with_threads(2);
    } catch (const std::exception&) {
      // Already started by someone else: its size stands.
    }
  });
  return std::make_shared<OtlpHttpExporter>(*url, std::move(options));
}

}  // namespace myop::trace
