#include "kube/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>

#include "base/clock.h"
#include "base/text.h"
#include "base/token_bucket.h"
#include "kube/connection_pool.h"
#include "kube/request_span.h"
#include "kube/server_backoff.h"

namespace myop::kube {
namespace {

using base::TimePoint;
std::string milliseconds_text(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

// ---- TLS ----------------------------------------------------------------------------------------------

// What the last failed certificate verification said. OpenSSL's reason is lost by the time Asio
// reports "Error in SSL handshake", so a verify hook records it here for the error message.
struct TlsDiagnostics {
  std::mutex mutex;
  std::string last_failure;
};

int verify_and_record(X509_STORE_CTX* store_context, void* argument) {
  auto* diagnostics = static_cast<TlsDiagnostics*>(argument);
  const int verified = X509_verify_cert(store_context);
  if (verified <= 0 && diagnostics != nullptr) {
    const int code = X509_STORE_CTX_get_error(store_context);
    std::string reason = code == X509_V_OK
                             ? std::string("the certificate does not name the host we connected to")
                             : std::string(X509_verify_cert_error_string(code));
    std::lock_guard lock(diagnostics->mutex);
    diagnostics->last_failure = std::move(reason);
  }
  return verified;
}

struct TlsMaterial {
  std::string ca_pem;
  std::string client_certificate_pem;
  std::string client_key_pem;
  TlsDiagnostics* diagnostics = nullptr;
};

// Throws boost::system::system_error on unusable material: called once up front (where it is caught and
// reported) and then once per set of clients.
void configure_tls(boost::asio::ssl::context& context, const TlsMaterial& material) {
  SSL_CTX* native = context.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  if (!material.ca_pem.empty()) {
    // A configured CA must be the only anchor, whatever the context was given before.
    SSL_CTX_set_cert_store(native, X509_STORE_new());
    context.add_certificate_authority(boost::asio::buffer(material.ca_pem));
  }
  context.set_verify_mode(boost::asio::ssl::verify_peer);
  SSL_CTX_set_cert_verify_callback(native, verify_and_record, material.diagnostics);
  if (!material.client_certificate_pem.empty()) {
    try {
      context.use_certificate_chain(boost::asio::buffer(material.client_certificate_pem));
    } catch (const std::exception& error) {
      throw std::runtime_error(std::string("the client certificate cannot be loaded: ") + error.what());
    }
    try {
      context.use_private_key(boost::asio::buffer(material.client_key_pem), boost::asio::ssl::context::pem);
    } catch (const std::exception& error) {
      throw std::runtime_error(
          std::string("the client key cannot be loaded or does not belong to the client certificate: ") +
          error.what());
    }
    if (SSL_CTX_check_private_key(native) != 1)
      throw std::runtime_error("the client key does not belong to the client certificate");
  }
}

// ---- the transport --------------------------------------------------------------------------------------

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string content_type;
  std::optional<std::chrono::seconds> retry_after;
};

std::optional<std::chrono::seconds> parse_retry_after(const std::string& value) {
  if (value.empty()) return std::nullopt;
  try {
    const long seconds = std::stol(value);
    if (seconds >= 0) return std::chrono::seconds(seconds);
  } catch (...) {
    // An HTTP date instead of seconds: the API server never sends one; ignore it.
  }
  return std::nullopt;
}

std::string host_of(const std::string& server) {
  std::string host = server;
  if (auto scheme = host.find("://"); scheme != std::string::npos) host = host.substr(scheme + 3);
  if (auto slash = host.find('/'); slash != std::string::npos) host = host.substr(0, slash);
  return host;
}

// Where the connection pool connects, from an https:// URL ("https://[::1]:6443/prefix") and the
// kubeconfig's tls-server-name. Sends the Host header and checks the name as kubectl does: the
// tls-server-name when one is set, otherwise the URL's host.
Result<PoolEndpoint> pool_endpoint(const ClientConfig& config) {
  PoolEndpoint endpoint;
  const std::string authority = host_of(config.server);
  if (auto slash = config.server.find('/', config.server.find("://") + 3); slash != std::string::npos) {
    endpoint.path_prefix = config.server.substr(slash);
    while (!endpoint.path_prefix.empty() && endpoint.path_prefix.back() == '/')
      endpoint.path_prefix.pop_back();
  }
  std::string host = authority;
  endpoint.port = "443";
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    host = authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < authority.size() && authority[close + 1] == ':')
      endpoint.port = authority.substr(close + 2);
  } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    endpoint.port = authority.substr(colon + 1);
  }
  const bool numeric_port = !endpoint.port.empty() && endpoint.port.size() <= 5 &&
                            endpoint.port.find_first_not_of("0123456789") == std::string::npos;
  if (host.empty() || !numeric_port || std::stoi(endpoint.port) < 1 || std::stoi(endpoint.port) > 65535)
    return make_error(
        Reason::InvalidConfiguration,
        "cannot use server URL " + config.server + ": it needs a host and, if any, a port from 1 to 65535");
  endpoint.host = host;
  endpoint.host_header = config.tls_server_name.empty() ? authority : config.tls_server_name;
  endpoint.tls_name = config.tls_server_name.empty() ? host : config.tls_server_name;
  return endpoint;
}

// A counting limit whose wait gives up on stop or deadline (std::counting_semaphore cannot see a
// std::stop_token). acquire() returns a guard that frees the slot when it goes away.
class InFlightLimit {
 public:
  InFlightLimit(int limit, std::shared_ptr<const base::Clock> clock)
      : clock_(std::move(clock)), available_(limit > 0 ? limit : std::numeric_limits<int>::max()) {}

  using Guard = std::unique_ptr<InFlightLimit, void (*)(InFlightLimit*)>;

  Guard acquire(const std::stop_token& stop, TimePoint deadline) {
    std::unique_lock lock(mutex_);
    if (!clock_->wait_until(freed_, lock, stop, deadline, [this] { return available_ > 0; }))
      return Guard(nullptr, &InFlightLimit::release_slot);
    --available_;
    return Guard(this, &InFlightLimit::release_slot);
  }

 private:
  static void release_slot(InFlightLimit* limit) {
    if (limit != nullptr) limit->release();
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      ++available_;
    }
    freed_.notify_one();
  }

  const std::shared_ptr<const base::Clock> clock_;
  std::mutex mutex_;
  std::condition_variable_any freed_;
  int available_;
};

class HttpsTransport final : public Transport {
 public:
  HttpsTransport(ClientConfig config, TransportOptions options, std::shared_ptr<CredentialSource> credentials)
      : config_(std::move(config)),
        options_(std::move(options)),
        host_(host_of(config_.server)),
        credentials_(std::move(credentials)),
        clock_(options_.clock ? options_.clock : base::system_clock()),
        bucket_(options_.qps, options_.burst, clock_),
        in_flight_(options_.max_requests_in_flight, clock_),
        retry_(options_.retry),
        server_backoff_(clock_, options_.retry.jitter) {}

  const std::string& host() const override { return host_; }
  const std::shared_ptr<const base::Clock>& clock() const override { return clock_; }

  // One client span covers the request and its retries, when a span is current on this thread (a
  // reconcile's); the API server receives its context as a W3C traceparent header.
  Result<Response> send(const Request& request, std::stop_token stop) override {
    trace::Span span = start_request_span(request.method, request.path, host_);
    if (!span.context().valid()) return send_attempts(request, stop, {}, nullptr);
    int resends = 0;
    auto result = send_attempts(request, stop, trace::format_traceparent(span.context()), &resends);
    if (result)
      end_request_span(span, result->status_code, resends, {}, {});
    else
      end_request_span(span, 0, resends, reason_name(result.error().reason), result.error().message);
    return result;
  }

  Result<Response> send_attempts(const Request& request, const std::stop_token& stop,
                                 const std::string& traceparent, int* resends) {
    const auto timeout = request.timeout.count() > 0 ? request.timeout : options_.default_timeout;
    const auto deadline = clock_->now() + timeout;
    bool retried_unauthorized = false;
    const bool holds = holds_for_server_backoff(request.path);
    for (int attempt = 0;; ++attempt) {
      if (resends != nullptr) *resends = attempt;
      if (holds && attempt == 0) {
        if (auto waited = wait_for_server_backoff(request, stop, deadline); !waited)
          return std::move(waited).error();
      }
      auto prepared = prepare(request, stop, deadline, traceparent);
      if (!prepared) return std::move(prepared).error();
      const Prepared& ready = prepared.value();

      auto slot = in_flight_.acquire(stop, deadline);
      if (!slot) {
        if (stop.stop_requested())
          return make_error(Reason::Cancelled, request.method + " " + request.path + " cancelled");
        return make_error(Reason::Timeout, "too many requests in flight (" +
                                               std::to_string(options_.max_requests_in_flight) +
                                               ") to send " + request.path + " before its deadline");
      }
      const auto started = clock_->now();
      auto answer = execute(*ready.clients->pool, request, ready, stop, deadline, timeout);
      slot.reset();
      observe(request.method, answer, started);

      Error failure;
      if (!answer) {
        failure = answer.error();
      } else if (answer->status == 401 && !retried_unauthorized) {
        // A rotated token file or an expired exec credential: fetch a fresh one and try once more.
        credentials_->unauthorized(ready.credential);
        retried_unauthorized = true;
        continue;
      } else if (answer->status == 429 || answer->status == 500 || answer->status == 503 ||
                 answer->status == 504) {
        failure = error_from_response(answer->status, answer->body);
        if (answer->retry_after) failure.retry_after = answer->retry_after;
        if (answer->status == 429 && failure.retry_after)
          server_backoff_.asked_to_wait(
              std::min<base::Duration>(*failure.retry_after, options_.retry.max_retry_after));
      } else {
        return Response{answer->status, std::move(answer->body), std::move(answer->content_type)};
      }

      auto delay = retry_.next_delay(attempt + 1, request.method, failure);
      // A retry is held once, here: no sooner than what is left of the client's wait (server_backoff.h).
      if (delay && holds)
        delay = std::max(*delay, std::chrono::ceil<std::chrono::milliseconds>(server_backoff_.remaining()));
      if (!delay || clock_->now() + *delay >= deadline) {
        if (answer)
          return Response{answer->status, std::move(answer->body), std::move(answer->content_type),
                          answer->retry_after};
        return failure;
      }
      spdlog::debug("{} {}: {}; retry {} in {} ms", request.method, request.path, failure.to_string(),
                    attempt + 1, delay->count());
      if (!clock_->sleep_for(stop, *delay))
        return make_error(Reason::Cancelled, request.method + " " + request.path + " cancelled");
    }
  }

  Result<StreamEnd> stream(const Request& request, const ChunkHandler& on_chunk, std::stop_token stop,
                           const StreamOptions& options) override {
    const auto open_timeout = request.timeout.count() > 0 ? request.timeout : options_.default_timeout;
    const auto open_deadline = clock_->now() + open_timeout;
    bool retried_unauthorized = false;
    for (int attempt = 0;; ++attempt) {
      auto prepared = prepare(request, stop, open_deadline);
      if (!prepared) return std::move(prepared).error();
      const Prepared& ready = prepared.value();

      const auto started = clock_->now();
      const PoolRequest pool_request{request.method, ready.target, &ready.headers, request.body,
                                     ready.content_type};
      const PoolChunkHandler counted = [&](std::string_view chunk) {
        if (options_.metrics) options_.metrics->observe_received_bytes(ReceivedKind::stream, chunk.size());
        return on_chunk(chunk);
      };
      auto outcome = ready.clients->pool->stream(
          pool_request, counted,
          [&](const PoolAnswer& header) {
            observe_code(request.method, std::to_string(header.status), started);
            if (options.on_open && header.status >= 200 && header.status <= 299)
              options.on_open(header.content_type);
          },
          stop, io_deadline(open_deadline), options.idle_timeout);

      Error failure;
      if (auto* broken = std::get_if<PoolFailure>(&outcome)) {
        if (broken->streaming) return stream_failure(*broken, request, options);
        observe_code(request.method, "<error>", started);
        failure = error_from_pool(*broken, open_timeout);
      } else {
        auto& end = std::get<PoolStreamEnd>(outcome);
        if (end.kind == PoolStreamEnd::Kind::ServerClosed) return StreamEnd::ServerClosed;
        if (end.kind == PoolStreamEnd::Kind::StoppedByHandler) return StreamEnd::StoppedByHandler;
        if (end.answer.status == 401 && !retried_unauthorized) {
          credentials_->unauthorized(ready.credential);
          retried_unauthorized = true;
          continue;
        }
        failure = error_from_response(end.answer.status, end.answer.body);
        if (auto retry_after = parse_retry_after(end.answer.retry_after)) failure.retry_after = retry_after;
      }
      auto delay = retry_.next_delay(attempt + 1, request.method, failure);
      if (!delay || clock_->now() + *delay >= open_deadline) return failure;
      if (!clock_->sleep_for(stop, *delay))
        return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
    }
  }

 private:
  struct Clients {
    std::string client_certificate_pem;
    std::string client_key_pem;
    std::shared_ptr<ConnectionPool> pool;  // unary requests, on the calling thread
  };
  struct Prepared {
    std::string target;  // path and encoded query
    HeaderList headers;  // every header but Host and Content-Type
    std::string content_type;
    Credential credential;
    std::shared_ptr<Clients> clients;
  };

 public:
  // Builds (or rebuilds, when an exec plugin hands out a new client certificate) the connection pool for
  // requests and streams.
  Result<std::shared_ptr<Clients>> clients_for(const Credential& credential) {
    std::string certificate = credential.client_certificate_pem.empty() ? config_.client_certificate_pem
                                                                        : credential.client_certificate_pem;
    std::string key =
        credential.client_certificate_pem.empty() ? config_.client_key_pem : credential.client_key_pem;
    std::lock_guard lock(clients_mutex_);
    if (clients_ && clients_->client_certificate_pem == certificate && clients_->client_key_pem == key)
      return clients_;

    TlsMaterial material{config_.ca_pem, certificate, key, &diagnostics_};
    auto context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
    try {
      // The system trust store only when no CA is configured: 140 certificates parsed once, not per use.
      if (config_.ca_pem.empty()) context->set_default_verify_paths();
      configure_tls(*context, material);
    } catch (const std::exception& error) {
      return make_error(Reason::InvalidConfiguration,
                        "cannot set up TLS for " + config_.server + " (" + config_.source +
                            "): " + error.what() +
                            "; check the certificate-authority and the client certificate and key");
    }
    auto clients = std::make_shared<Clients>();
    clients->client_certificate_pem = std::move(certificate);
    clients->client_key_pem = std::move(key);
    PoolOptions pool_options;
    pool_options.max_idle = static_cast<std::size_t>(std::max(1, options_.max_requests_in_flight));
    auto endpoint = pool_endpoint(config_);
    if (!endpoint) return std::move(endpoint).error();
    clients->pool =
        std::make_shared<ConnectionPool>(std::move(endpoint).value(), std::move(context), pool_options);
    clients_ = clients;
    return clients;
  }

 private:
  // Holds a request not yet sent for what is left of the server's Retry-After and its jitter
  // (server_backoff.h); passes when the request may go, else fails with the error it ends with: cancelled, or
  // TooManyRequests, unsent, when its deadline comes first (with the remaining wait as retry_after, for the
  // caller's requeue).
  Result<void> wait_for_server_backoff(const Request& request, const std::stop_token& stop,
                                       TimePoint deadline) {
    const base::Duration wait = server_backoff_.hold(retry_.random_unit());
    if (wait <= base::Duration::zero()) return {};
    if (clock_->now() + wait >= deadline) {
      const auto seconds = std::chrono::ceil<std::chrono::seconds>(wait);
      Error error = make_error(Reason::TooManyRequests,
                               "the API server asked this client to wait (429 with Retry-After) " +
                                   std::to_string(seconds.count()) + " s more, past the deadline of " +
                                   request.method + " " + request.path + "; not sent");
      error.retry_after = seconds;
      error.request_not_sent = true;
      return error;
    }
    if (!clock_->sleep_for(stop, wait))
      return make_error(Reason::Cancelled, request.method + " " + request.path + " cancelled");
    return {};
  }

  Result<Prepared> prepare(const Request& request, const std::stop_token& stop, TimePoint deadline,
                           const std::string& traceparent = {}) {
    if (stop.stop_requested())
      return make_error(Reason::Cancelled, request.method + " " + request.path + " cancelled");
    const auto waiting_since = clock_->now();
    if (!bucket_.acquire(stop, deadline)) {
      if (stop.stop_requested())
        return make_error(Reason::Cancelled, request.method + " " + request.path + " cancelled");
      return make_error(Reason::Timeout, "the client-side rate limit (--qps " + std::to_string(options_.qps) +
                                             ", --burst " + std::to_string(options_.burst) +
                                             ") would delay " + request.path + " past its deadline");
    }
    if (options_.metrics)
      options_.metrics->observe_rate_limiter_wait(request.method, host_, clock_->now() - waiting_since);

    auto credential = credentials_->current();
    if (!credential) return std::move(credential).error();
    auto clients = clients_for(credential.value());
    if (!clients) return std::move(clients).error();

    Prepared prepared;
    prepared.target = request.path;
    if (!request.query.empty()) prepared.target += "?" + encode_query(request.query);
    prepared.headers.reserve(3 + request.headers.size());
    prepared.headers.emplace_back("User-Agent", options_.user_agent);
    prepared.headers.emplace_back("Accept", request.accept.empty() ? "application/json" : request.accept);
    if (!credential->bearer_token.empty())
      prepared.headers.emplace_back("Authorization", "Bearer " + credential->bearer_token);
    prepared.headers.insert(prepared.headers.end(), request.headers.begin(), request.headers.end());
    if (!traceparent.empty()) prepared.headers.emplace_back("traceparent", traceparent);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH")
      prepared.content_type = request.content_type.empty() ? "application/json" : request.content_type;
    prepared.credential = std::move(credential).value();
    prepared.clients = std::move(clients).value();
    return prepared;
  }

  Result<HttpAnswer> execute(ConnectionPool& pool, const Request& request, const Prepared& prepared,
                             const std::stop_token& stop, TimePoint deadline,
                             std::chrono::milliseconds timeout) {
    const PoolRequest pool_request{request.method, prepared.target,       &prepared.headers,
                                   request.body,   prepared.content_type, request.maximum_response_bytes};
    auto outcome = pool.send(pool_request, stop, io_deadline(deadline));
    if (auto* answer = std::get_if<PoolAnswer>(&outcome))
      return HttpAnswer{answer->status, std::move(answer->body), std::move(answer->content_type),
                        parse_retry_after(answer->retry_after)};
    const auto& failure = std::get<PoolFailure>(outcome);
    if (failure.body_too_large) return answer_too_large(request);
    return error_from_pool(failure, timeout);
  }

  // The same answer would be as large next time: not retried. Reason Transport, as for any answer that
  // could not be read, so that callers treat it as an unusable answer, not as something the server said.
  Error answer_too_large(const Request& request) const {
    Error error = make_error(
        Reason::Transport, "the answer of " + config_.server + " to " + request.method + " " + request.path +
                               " is larger than the client's limit of " +
                               std::to_string(request.maximum_response_bytes) + " bytes; it was not read");
    error.permanent = true;
    return error;
  }

  // The pool's I/O runs on the steady clock; deadlines are this transport's clock's.
  std::chrono::steady_clock::time_point io_deadline(TimePoint deadline) const {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - clock_->now());
  }

  Error error_from_pool(const PoolFailure& failure, std::chrono::milliseconds timeout) {
    using Stage = PoolFailure::Stage;
    if (failure.cancelled)
      return make_error(Reason::Cancelled, "request to " + config_.server + " cancelled");
    if (failure.timed_out)
      return make_error(Reason::Timeout,
                        "no answer from " + config_.server + " within " + milliseconds_text(timeout));
    const std::string what = failure.code.message();
    Error error = make_error(Reason::Transport, "");
    switch (failure.stage) {
      case Stage::Resolve:
      case Stage::Connect:
        error.message = "cannot connect to " + config_.server + ": " + what;
        error.request_not_sent = true;
        break;
      case Stage::Handshake: {
        std::string verification = take_verification_failure();
        // A certificate that fails verification fails the same way next time; a handshake cut off
        // (the server restarting) may not.
        error.permanent = !verification.empty();
        error.message = tls_failure_message(verification);
        error.request_not_sent = true;
        break;
      }
      case Stage::Write:
        // The server acts only on a complete request; one we could not finish writing was not acted on.
        error.message = "connection to " + config_.server + " broke while sending: " + what;
        error.request_not_sent = true;
        break;
      case Stage::Read:
        error.message = "connection to " + config_.server + " failed: " + what;
        break;
    }
    return error;
  }

  // Why the last certificate verification failed, once; empty when none failed since.
  std::string take_verification_failure() {
    std::lock_guard lock(diagnostics_.mutex);
    return std::exchange(diagnostics_.last_failure, std::string());
  }

  std::string tls_failure_message(const std::string& reason) const {
    const std::string name = config_.tls_server_name.empty() ? host_ : config_.tls_server_name;
    return "TLS handshake with " + config_.server + " failed" +
           (reason.empty() ? std::string() : ": " + reason) + ". The server certificate must be signed by " +
           (config_.ca_pem.empty() ? std::string("a CA in the system trust store")
                                   : "the configured CA (" + config_.ca_origin + ")") +
           " and name " + name +
           " (or set tls-server-name); if a client certificate is used, the "
           "server must trust its issuer";
  }

  // A stream that broke after its 2xx header: the watcher decides what comes next.
  static Error stream_failure(const PoolFailure& failure, const Request& request,
                              const StreamOptions& options) {
    if (failure.cancelled) return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
    if (failure.timed_out)
      return make_error(Reason::Timeout, "no data on " + request.path + " for " +
                                             milliseconds_text(options.idle_timeout) +
                                             "; the connection is considered dead");
    return make_error(Reason::Transport, "the stream " + request.path + " broke: " + failure.code.message());
  }

  void observe(const std::string& method, const Result<HttpAnswer>& answer, TimePoint started) {
    observe_code(method, answer ? std::to_string(answer->status) : std::string("<error>"), started);
    if (answer && options_.metrics)
      options_.metrics->observe_received_bytes(ReceivedKind::response, answer->body.size());
  }

  void observe_code(const std::string& method, const std::string& code, TimePoint started) {
    if (!options_.metrics) return;
    options_.metrics->observe(RequestObservation{method, host_, code, clock_->now() - started});
  }

  const ClientConfig config_;
  const TransportOptions options_;
  const std::string host_;
  const std::shared_ptr<CredentialSource> credentials_;
  const std::shared_ptr<const base::Clock> clock_;
  base::TokenBucket bucket_;
  InFlightLimit in_flight_;
  const RetryPolicy retry_;
  ServerBackoff server_backoff_;
  // Before the clients: their TLS context's verify hook writes here, so it must outlive them.
  TlsDiagnostics diagnostics_;
  std::mutex clients_mutex_;
  std::shared_ptr<Clients> clients_;
};

}  // namespace

std::string encode_query(const QueryParameters& query) {
  std::string text;
  for (const auto& [name, value] : query) {
    if (!text.empty()) text += '&';
    text += base::percent_encode(name) + "=" + base::percent_encode(value);
  }
  return text;
}

Result<std::shared_ptr<Transport>> make_https_transport(const ClientConfig& config,
                                                        TransportOptions options) {
  if (config.server.rfind("https://", 0) != 0)
    return make_error(Reason::InvalidConfiguration, "server " + config.server + " is not an https:// URL");
  auto credentials = options.credentials ? options.credentials : make_credential_source(config);
  auto transport = std::make_shared<HttpsTransport>(config, std::move(options), credentials);
  // Fail now, not on the first request, when the CA or the client certificate cannot be used.
  Credential initial;
  initial.client_certificate_pem = config.client_certificate_pem;
  initial.client_key_pem = config.client_key_pem;
  auto clients = transport->clients_for(initial);
  if (!clients) return std::move(clients).error();
  return std::shared_ptr<Transport>(std::move(transport));
}

}  // namespace myop::kube
