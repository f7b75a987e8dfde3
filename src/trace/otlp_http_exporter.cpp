#include "trace/otlp_http_exporter.h"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace myop::trace {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// The collector's answer is read only for its status; a bigger body than this fails the export.
constexpr std::uint64_t kMaximumAnswerBytes = 1 << 20;

// Where the spans go, from otlp_traces_url's URL.
struct Target {
  bool tls = false;
  std::string host;  // a name, or an IP literal (IPv6 without its brackets)
  std::string port;
  std::string host_header;
  std::string path;  // "/v1/traces", or longer
  // The host's address when it is an IP literal: nothing to resolve, no SNI.
  std::optional<asio::ip::tcp::endpoint> literal;
};

std::optional<Target> parse_target(const std::string& url) {
  Target target;
  const auto scheme_end = url.find("://");
  target.tls = url.compare(0, scheme_end, "https") == 0;
  const std::string rest = url.substr(scheme_end + 3);
  const auto path_start = rest.find('/');
  const std::string authority = rest.substr(0, path_start);
  target.path = path_start == std::string::npos ? "/" : rest.substr(path_start);
  target.host_header = authority;
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    target.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return std::nullopt;
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    target.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (target.host.empty() || authority.find('@') != std::string::npos) return std::nullopt;
  if (port.empty()) port = target.tls ? "443" : "80";
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    return std::nullopt;
  target.port = port;
  error_code not_literal;
  const auto address = asio::ip::make_address(target.host, not_literal);
  if (!not_literal) target.literal.emplace(address, static_cast<unsigned short>(std::stoi(port)));
  return target;
}

// One export: resolve, connect, (TLS handshake,) POST, read the answer, every step under one
// deadline, as a chain of Asio operations on an io_context that only the exporting thread runs.
// cancel() stops that context from another thread; the chain is then abandoned with it.
template <typename Stream>
class Exchange {
 public:
  Exchange(asio::io_context& io, Stream& stream, const Target& target, const std::string& user_agent,
           std::string body, Clock::time_point deadline)
      : io_(io), stream_(stream), target_(target), resolver_(io), timer_(io), deadline_(deadline) {
    request_.method(http::verb::post);
    request_.target(target.path);
    request_.version(11);
    request_.set(http::field::host, target.host_header);
    request_.set(http::field::user_agent, user_agent);
    request_.set(http::field::content_type, "application/json");
    request_.keep_alive(false);
    request_.body() = std::move(body);
    request_.prepare_payload();
    parser_.body_limit(kMaximumAnswerBytes);
  }

  // The answer's status, or the error that ended the exchange ("stage: message").
  std::variant<unsigned, std::string> run() {
    if (target_.literal) {
      endpoints_.push_back(*target_.literal);
      connect();
    } else {
      resolve();
    }
    io_.run();
    if (!outcome_) return std::string("cancelled");
    return *outcome_;
  }

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void fail(const char* stage, const error_code& error) {
    const bool expired = error == beast::error::timeout || Clock::now() >= deadline_;
    outcome_ = std::string(stage) + ": " + (expired ? std::string("timed out") : error.message());
  }

  void resolve() {
    // getaddrinfo cannot be interrupted; the deadline gives up on it.
    timer_.expires_at(deadline_);
    timer_.async_wait([this](const error_code& error) {
      if (!error) resolver_.cancel();
    });
    resolver_.async_resolve(
        target_.host, target_.port,
        [this](const error_code& error, const asio::ip::tcp::resolver::results_type& results) {
          timer_.cancel();
          if (error) return fail("resolve", error);
          for (const auto& entry : results) endpoints_.push_back(entry.endpoint());
          connect();
        });
  }

  void connect() {
    tcp().expires_at(deadline_);
    tcp().async_connect(endpoints_, [this](const error_code& error, const asio::ip::tcp::endpoint&) {
      if (error) return fail("connect", error);
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        write();
      } else {
        handshake();
      }
    });
  }

  void handshake() {
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      // Always verified: the chain (the system trust store) and the name.
      if (!target_.literal) SSL_set_tlsext_host_name(stream_.native_handle(), target_.host.c_str());
      stream_.set_verify_mode(asio::ssl::verify_peer);
      stream_.set_verify_callback(asio::ssl::host_name_verification(target_.host));
      stream_.async_handshake(asio::ssl::stream_base::client, [this](const error_code& error) {
        if (error) return fail("TLS handshake", error);
        write();
      });
    }
  }

  void write() {
    http::async_write(stream_, request_, [this](const error_code& error, std::size_t) {
      if (error) return fail("send", error);
      http::async_read(stream_, buffer_, parser_, [this](const error_code& read_error, std::size_t) {
        if (read_error) return fail("read the answer", read_error);
        outcome_ = parser_.get().result_int();
      });
    });
  }

  asio::io_context& io_;
  Stream& stream_;
  const Target& target_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer timer_;
  Clock::time_point deadline_;
  std::vector<asio::ip::tcp::endpoint> endpoints_;
  http::request<http::string_body> request_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  std::optional<std::variant<unsigned, std::string>> outcome_;
};

class OtlpHttpExporter final : public SpanExporter {
 public:
  OtlpHttpExporter(Target target, OtlpHttpOptions options)
      : target_(std::move(target)),
        options_(std::move(options)),
        // "<service>/<version>", as the resource names the process.
        user_agent_(options_.resource.service_name + (options_.resource.service_version.empty()
                                                          ? ""
                                                          : "/" + options_.resource.service_version)) {
    if (target_.tls) {
      // The system trust store, loaded once: an export does not parse it again.
      tls_.emplace(asio::ssl::context::tls_client);
      tls_->set_default_verify_paths();
      tls_->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                        asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    }
  }

  ExportResult export_spans(const std::vector<SpanData>& spans) override {
    std::string body = encode_otlp_json(spans, options_.resource);
    const auto deadline = Clock::now() + options_.timeout;
    asio::io_context io;
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return ExportResult::permanent_failure;
      running_ = &io;
    }
    std::variant<unsigned, std::string> outcome;
    if (tls_) {
      beast::ssl_stream<beast::tcp_stream> stream(io, *tls_);
      outcome = Exchange(io, stream, target_, user_agent_, std::move(body), deadline).run();
    } else {
      beast::tcp_stream stream(io);
      outcome = Exchange(io, stream, target_, user_agent_, std::move(body), deadline).run();
    }
    {
      std::lock_guard lock(mutex_);
      running_ = nullptr;
    }
    if (const auto* failure = std::get_if<std::string>(&outcome)) {
      report_failure(*failure);
      return ExportResult::retryable_failure;
    }
    // OTLP's partial-success answer is not acted on.
    const unsigned status = std::get<unsigned>(outcome);
    if (status >= 200 && status < 300) return ExportResult::success;
    report_failure("the collector answered HTTP " + std::to_string(status));
    const bool retryable = status == 429 || status == 502 || status == 503 || status == 504;
    return retryable ? ExportResult::retryable_failure : ExportResult::permanent_failure;
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (running_ != nullptr) running_->stop();
  }

 private:
  void report_failure(const std::string& reason) {
    const auto now = Clock::now();
    if (last_report_ && now - *last_report_ < std::chrono::minutes(1)) return;
    last_report_ = now;
    spdlog::warn(
        "cannot export trace spans to {}: {} (their spans are dropped and counted in "
        "myoperator_trace_spans_dropped_total; reported at most once a minute)",
        options_.endpoint, reason);
  }

  const Target target_;
  const OtlpHttpOptions options_;
  const std::string user_agent_;
  std::optional<asio::ssl::context> tls_;
  std::optional<Clock::time_point> last_report_;  // the export thread's only
  std::mutex mutex_;
  asio::io_context* running_ = nullptr;  // the export in flight, which cancel() stops
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
  auto target = url ? parse_target(*url) : std::nullopt;
  if (!target)
    throw std::invalid_argument("'" + options.endpoint +
                                "' is not an OTLP/HTTP endpoint such as http://otel-collector:4318");
  if (options.resource.service_name.empty() || options.resource.scope_name.empty())
    throw std::invalid_argument(
        "OtlpHttpOptions: resource.service_name and resource.scope_name are required");
  return std::make_shared<OtlpHttpExporter>(std::move(*target), std::move(options));
}

}  // namespace myop::trace
