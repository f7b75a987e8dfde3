#include "kube/transport.h"

// spdlog (fmt) before cpprestsdk: cpprestsdk defines a macro U() that breaks fmt's templates.
#include <spdlog/spdlog.h>
// clang-format off
#include <cpprest/http_client.h>
// clang-format on
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>

#include "base/clock.h"
#include "base/token_bucket.h"
#include "kube/connection_pool.h"

namespace myop::kube {
namespace {

using base::TimePoint;
using web::http::http_request;
using web::http::http_response;
using web::http::client::http_client;
using web::http::client::http_client_config;

// ---- waiting on pplx tasks from a caller thread -------------------------------------------------------

// Filled by the final, task-based continuation of a chain (which therefore observes every exception)
// and waited for by the calling thread, which can give up on stop or deadline without blocking on pplx.
template <typename T>
struct Pending {
  std::mutex mutex;
  std::condition_variable_any changed;
  bool done = false;
  std::optional<T> value;
  std::exception_ptr failure;

  void finish(std::optional<T> result, std::exception_ptr error) {
    {
      std::lock_guard lock(mutex);
      value = std::move(result);
      failure = std::move(error);
      done = true;
    }
    changed.notify_all();
  }
};

enum class WaitOutcome { Done, Stopped, DeadlineExceeded };

// Sleeps until done, stop or deadline, without polling: an idle watch waits here between chunks.
template <typename T>
WaitOutcome wait_for(const base::Clock& clock, Pending<T>& pending, const std::stop_token& stop,
                     TimePoint deadline) {
  std::unique_lock lock(pending.mutex);
  if (clock.wait_until(pending.changed, lock, stop, deadline, [&pending] { return pending.done; }))
    return WaitOutcome::Done;
  return stop.stop_requested() ? WaitOutcome::Stopped : WaitOutcome::DeadlineExceeded;
}

std::string milliseconds_text(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

// ---- TLS ----------------------------------------------------------------------------------------------

// What the last failed certificate verification said. OpenSSL's reason is lost by the time cpprestsdk
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
  bool insecure_skip_tls_verify = false;
  TlsDiagnostics* diagnostics = nullptr;
};

// Throws boost::system::system_error on unusable material: called once up front (where it is caught and
// reported) and then by cpprestsdk for every new connection.
void configure_tls(boost::asio::ssl::context& context, const TlsMaterial& material) {
  SSL_CTX* native = context.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  if (!material.insecure_skip_tls_verify) {
    if (!material.ca_pem.empty()) {
      // cpprestsdk has loaded the system trust store; a configured CA must be the only anchor.
      SSL_CTX_set_cert_store(native, X509_STORE_new());
      context.add_certificate_authority(boost::asio::buffer(material.ca_pem));
    }
    context.set_verify_mode(boost::asio::ssl::verify_peer);
    SSL_CTX_set_cert_verify_callback(native, verify_and_record, material.diagnostics);
  }
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

std::optional<std::chrono::seconds> parse_retry_after(const web::http::http_headers& headers) {
  auto found = headers.find("Retry-After");
  if (found == headers.end()) return std::nullopt;
  return parse_retry_after(found->second);
}

std::string host_of(const std::string& server) {
  std::string host = server;
  if (auto scheme = host.find("://"); scheme != std::string::npos) host = host.substr(scheme + 3);
  if (auto slash = host.find('/'); slash != std::string::npos) host = host.substr(0, slash);
  return host;
}

// Where the connection pool connects, from an https:// URL ("https://[::1]:6443/prefix") and the
// kubeconfig's tls-server-name. Sends the Host header and checks the name as cpprestsdk did: the
// tls-server-name when one is set, otherwise the URL's host.
PoolEndpoint pool_endpoint(const ClientConfig& config) {
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
  endpoint.host = host;
  endpoint.host_header = config.tls_server_name.empty() ? authority : config.tls_server_name;
  endpoint.tls_name = config.tls_server_name.empty() ? host : config.tls_server_name;
  endpoint.verify_name = !config.insecure_skip_tls_verify;
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
        // Never freed: the verify hook of a pooled connection may outlive this transport.
        diagnostics_(new TlsDiagnostics) {}

  const std::string& host() const override { return host_; }

  Result<Response> send(const Request& request, std::stop_token stop) override {
    const auto timeout = request.timeout.count() > 0 ? request.timeout : options_.default_timeout;
    const auto deadline = clock_->now() + timeout;
    bool retried_unauthorized = false;
    for (int attempt = 0;; ++attempt) {
      auto prepared = prepare(request, stop, deadline);
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
      } else {
        return Response{answer->status, std::move(answer->body), std::move(answer->content_type)};
      }

      auto delay = retry_.next_delay(attempt + 1, request.method, failure);
      if (!delay || clock_->now() + *delay >= deadline) {
        if (answer) return Response{answer->status, std::move(answer->body), std::move(answer->content_type)};
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
      const Credential& credential = prepared->credential;
      const auto& clients = prepared->clients;
      const http_request message = cpprest_request(request, prepared.value());

      const auto started = clock_->now();
      pplx::cancellation_token_source cancellation;
      auto headers = std::make_shared<Pending<http_response>>();
      clients->streams->request(message, cancellation.get_token())
          .then([headers](pplx::task<http_response> task) {
            try {
              headers->finish(task.get(), nullptr);
            } catch (...) {
              headers->finish(std::nullopt, std::current_exception());
            }
          });
      const auto outcome = wait_for(*clock_, *headers, stop, open_deadline);
      if (outcome != WaitOutcome::Done) {
        cancellation.cancel();
        if (outcome == WaitOutcome::Stopped)
          return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
        return make_error(Reason::Timeout, "no answer from " + config_.server + " to " + request.path +
                                               " within " + milliseconds_text(open_timeout));
      }
      if (headers->failure) {
        Error failure = error_from_exception(headers->failure, cancellation);
        observe_code(request.method, "<error>", started);
        auto delay = retry_.next_delay(attempt + 1, request.method, failure);
        if (!delay || clock_->now() + *delay >= open_deadline) return failure;
        if (!clock_->sleep_for(stop, *delay))
          return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
        continue;
      }
      http_response response = std::move(*headers->value);
      const int status = response.status_code();
      observe_code(request.method, std::to_string(status), started);
      if (status < 200 || status > 299) {
        auto body = read_whole_body(response, cancellation, stop, open_deadline);
        cancellation.cancel();
        if (status == 401 && !retried_unauthorized) {
          credentials_->unauthorized(credential);
          retried_unauthorized = true;
          continue;
        }
        Error failure = error_from_response(status, body ? body.value() : std::string());
        if (auto retry_after = parse_retry_after(response.headers())) failure.retry_after = retry_after;
        auto delay = retry_.next_delay(attempt + 1, request.method, failure);
        if (!delay || clock_->now() + *delay >= open_deadline) return failure;
        if (!clock_->sleep_for(stop, *delay))
          return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
        continue;
      }
      return read_stream(response, cancellation, request, on_chunk, stop, options);
    }
  }

 private:
  struct Clients {
    std::string client_certificate_pem;
    std::string client_key_pem;
    std::shared_ptr<ConnectionPool> pool;  // unary requests, on the calling thread
    std::shared_ptr<http_client> streams;  // watches
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
  // requests and the cpprestsdk client for streams, on the same TLS configuration.
  Result<std::shared_ptr<Clients>> clients_for(const Credential& credential) {
    std::string certificate = credential.client_certificate_pem.empty() ? config_.client_certificate_pem
                                                                        : credential.client_certificate_pem;
    std::string key =
        credential.client_certificate_pem.empty() ? config_.client_key_pem : credential.client_key_pem;
    std::lock_guard lock(clients_mutex_);
    if (clients_ && clients_->client_certificate_pem == certificate && clients_->client_key_pem == key)
      return clients_;

    TlsMaterial material{config_.ca_pem, certificate, key, config_.insecure_skip_tls_verify, diagnostics_};
    try {
      boost::asio::ssl::context probe(boost::asio::ssl::context::sslv23_client);
      configure_tls(probe, material);
    } catch (const std::exception& error) {
      return make_error(Reason::InvalidConfiguration,
                        "cannot set up TLS for " + config_.server + " (" + config_.source +
                            "): " + error.what() +
                            "; check the certificate-authority and the client certificate and key");
    }
    auto make_client = [&](std::chrono::seconds idle_timeout) {
      http_client_config client_config;
      client_config.set_timeout(idle_timeout);
      client_config.set_validate_certificates(!config_.insecure_skip_tls_verify);
      client_config.set_ssl_context_callback(
          [material](boost::asio::ssl::context& context) { configure_tls(context, material); });
      return std::make_shared<http_client>(utility::conversions::to_string_t(config_.server), client_config);
    };
    auto clients = std::make_shared<Clients>();
    clients->client_certificate_pem = std::move(certificate);
    clients->client_key_pem = std::move(key);
    try {
      auto context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
      if (config_.ca_pem.empty()) context->set_default_verify_paths();
      configure_tls(*context, material);
      PoolOptions pool_options;
      pool_options.max_idle = static_cast<std::size_t>(std::max(1, options_.max_requests_in_flight));
      clients->pool =
          std::make_shared<ConnectionPool>(pool_endpoint(config_), std::move(context), pool_options);
      // cpprestsdk's timeout is per client and is an idle timeout: streams enforce their own idle limit.
      clients->streams = make_client(std::chrono::hours(2));
    } catch (const std::exception& error) {
      return make_error(Reason::InvalidConfiguration,
                        "cannot use server URL " + config_.server + ": " + error.what());
    }
    clients_ = clients;
    return clients;
  }

 private:
  Result<Prepared> prepare(const Request& request, const std::stop_token& stop, TimePoint deadline) {
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
    prepared.headers.emplace_back("Accept", "application/json");
    if (!credential->bearer_token.empty())
      prepared.headers.emplace_back("Authorization", "Bearer " + credential->bearer_token);
    prepared.headers.insert(prepared.headers.end(), request.headers.begin(), request.headers.end());
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH")
      prepared.content_type = request.content_type.empty() ? "application/json" : request.content_type;
    prepared.credential = std::move(credential).value();
    prepared.clients = std::move(clients).value();
    return prepared;
  }

  http_request cpprest_request(const Request& request, const Prepared& prepared) const {
    http_request message(utility::conversions::to_string_t(request.method));
    message.set_request_uri(utility::conversions::to_string_t(prepared.target));
    auto& headers = message.headers();
    for (const auto& [name, value] : prepared.headers) headers.add(name, value);
    // cpprestsdk takes SNI and the certificate name from the Host header when one is set.
    if (!config_.tls_server_name.empty()) headers.add("Host", config_.tls_server_name);
    if (!prepared.content_type.empty()) {
      message.set_body(std::string(request.body), prepared.content_type);
      headers.set_content_type(prepared.content_type);
    }
    return message;
  }

  Result<HttpAnswer> execute(ConnectionPool& pool, const Request& request, const Prepared& prepared,
                             const std::stop_token& stop, TimePoint deadline,
                             std::chrono::milliseconds timeout) {
    const PoolRequest pool_request{request.method, prepared.target, &prepared.headers, request.body,
                                   prepared.content_type};
    // The pool's I/O runs on the steady clock; the deadline is this transport's clock's.
    const auto io_deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - clock_->now());
    auto outcome = pool.send(pool_request, stop, io_deadline);
    if (auto* answer = std::get_if<PoolAnswer>(&outcome))
      return HttpAnswer{answer->status, std::move(answer->body), std::move(answer->content_type),
                        parse_retry_after(answer->retry_after)};
    return error_from_pool(std::get<PoolFailure>(outcome), timeout);
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
      case Stage::Handshake:
        error.message = tls_failure_message();
        error.request_not_sent = true;
        break;
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

  std::string tls_failure_message() {
    std::string reason;
    {
      std::lock_guard lock(diagnostics_->mutex);
      reason = std::exchange(diagnostics_->last_failure, std::string());
    }
    const std::string name = config_.tls_server_name.empty() ? host_ : config_.tls_server_name;
    return "TLS handshake with " + config_.server + " failed" +
           (reason.empty() ? std::string() : ": " + reason) + ". The server certificate must be signed by " +
           (config_.ca_pem.empty() ? std::string("a CA in the system trust store")
                                   : "the configured CA (" + config_.ca_origin + ")") +
           " and name " + name +
           " (or set tls-server-name); if a client certificate is used, the "
           "server must trust its issuer";
  }

  Result<std::string> read_whole_body(http_response& response, pplx::cancellation_token_source& cancellation,
                                      const std::stop_token& stop, TimePoint deadline) {
    auto pending = std::make_shared<Pending<std::string>>();
    response.extract_utf8string(true).then([pending](pplx::task<std::string> body) {
      try {
        pending->finish(body.get(), nullptr);
      } catch (...) {
        pending->finish(std::nullopt, std::current_exception());
      }
    });
    if (wait_for(*clock_, *pending, stop, deadline) != WaitOutcome::Done) {
      cancellation.cancel();
      return make_error(Reason::Timeout, "the error body did not arrive");
    }
    if (pending->failure) return error_from_exception(pending->failure, cancellation);
    return std::move(*pending->value);
  }

  // Waits for one byte (never a fixed-size read, which would block on a quiet watch), then takes
  // whatever else has already arrived, and hands it over as one chunk.
  Result<StreamEnd> read_stream(http_response& response, pplx::cancellation_token_source& cancellation,
                                const Request& request, const ChunkHandler& on_chunk,
                                const std::stop_token& stop, const StreamOptions& options) {
    using Buffer = concurrency::streams::streambuf<uint8_t>;
    Buffer buffer = response.body().streambuf();
    std::string chunk;
    for (;;) {
      auto next = std::make_shared<Pending<Buffer::int_type>>();
      // The continuation holds the buffer: after a cancel it may run when this frame is long gone.
      buffer.bumpc().then([next, buffer](pplx::task<Buffer::int_type> task) {
        try {
          next->finish(task.get(), nullptr);
        } catch (...) {
          next->finish(std::nullopt, std::current_exception());
        }
      });
      const auto outcome = wait_for(*clock_, *next, stop, clock_->now() + options.idle_timeout);
      if (outcome == WaitOutcome::Stopped) {
        cancellation.cancel();
        return make_error(Reason::Cancelled, "watch " + request.path + " cancelled");
      }
      if (outcome == WaitOutcome::DeadlineExceeded) {
        cancellation.cancel();
        return make_error(Reason::Timeout, "no data on " + request.path + " for " +
                                               milliseconds_text(options.idle_timeout) +
                                               "; the connection is considered dead");
      }
      if (next->failure) {
        Error failure = error_from_exception(next->failure, cancellation);
        failure.message = "the stream " + request.path + " broke: " + failure.message;
        return failure;
      }
      const auto first = *next->value;
      if (first == Buffer::traits::eof()) return StreamEnd::ServerClosed;
      chunk.assign(1, static_cast<char>(first));
      const std::size_t available = buffer.in_avail();
      if (available > 0) {
        chunk.resize(1 + available);
        // Satisfied synchronously: the bytes are already in the buffer.
        const std::size_t read = buffer.getn(reinterpret_cast<uint8_t*>(chunk.data() + 1), available).get();
        chunk.resize(1 + read);
      }
      bool keep_reading = false;
      try {
        keep_reading = on_chunk(chunk);
      } catch (...) {
        cancellation.cancel();
        throw;
      }
      if (!keep_reading) {
        cancellation.cancel();
        return StreamEnd::StoppedByHandler;
      }
    }
  }

  Error error_from_exception(const std::exception_ptr& failure,
                             const pplx::cancellation_token_source& cancellation) {
    std::string what = "unknown failure";
    std::string code_text;
    try {
      std::rethrow_exception(failure);
    } catch (const pplx::task_canceled&) {
      return make_error(Reason::Cancelled, "request to " + config_.server + " cancelled");
    } catch (const web::http::http_exception& error) {
      what = error.what();
      if (error.error_code()) code_text = error.error_code().message();
      if (error.error_code() == std::errc::timed_out)
        return make_error(Reason::Timeout, "no data from " + config_.server + " (idle timeout)");
    } catch (const std::exception& error) {
      what = error.what();
    } catch (...) {
    }
    if (cancellation.get_token().is_canceled())
      return make_error(Reason::Cancelled, "request to " + config_.server + " cancelled");

    Error error = make_error(Reason::Transport, "");
    if (what.find("SSL handshake") != std::string::npos) {
      error.message = tls_failure_message();
      error.request_not_sent = true;
    } else if (what.find("connect") != std::string::npos || what.find("resolv") != std::string::npos) {
      error.message = "cannot connect to " + config_.server + ": " + what +
                      (code_text.empty() ? "" : " (" + code_text + ")");
      error.request_not_sent = true;
    } else if (what.find("Failed to write request") != std::string::npos) {
      // The server acts only on a complete request; one we could not finish writing was not acted on.
      error.message = "connection to " + config_.server + " broke while sending: " + what +
                      (code_text.empty() ? "" : " (" + code_text + ")");
      error.request_not_sent = true;
    } else {
      error.message = "connection to " + config_.server + " failed: " + what +
                      (code_text.empty() ? "" : " (" + code_text + ")");
    }
    return error;
  }

  void observe(const std::string& method, const Result<HttpAnswer>& answer, TimePoint started) {
    observe_code(method, answer ? std::to_string(answer->status) : std::string("<error>"), started);
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
  TlsDiagnostics* const diagnostics_;
  std::mutex clients_mutex_;
  std::shared_ptr<Clients> clients_;
};

}  // namespace

std::string encode_query(const QueryParameters& query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  auto encode = [](std::string_view text) {
    std::string encoded;
    for (unsigned char c : text) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.' || c == '_' || c == '~') {
        encoded += static_cast<char>(c);
      } else {
        encoded += '%';
        encoded += kHex[c >> 4];
        encoded += kHex[c & 0x0F];
      }
    }
    return encoded;
  };
  std::string text;
  for (const auto& [name, value] : query) {
    if (!text.empty()) text += '&';
    text += encode(name) + "=" + encode(value);
  }
  return text;
}

Result<std::shared_ptr<Transport>> make_https_transport(const ClientConfig& config,
                                                        TransportOptions options) {
  if (config.server.rfind("https://", 0) != 0)
    return make_error(Reason::InvalidConfiguration, "server " + config.server + " is not an https:// URL");
  if (config.insecure_skip_tls_verify)
    spdlog::warn(
        "TLS verification of {} is OFF (insecure-skip-tls-verify, explicitly allowed): anyone on the path "
        "can read and change traffic, credentials included. Configure certificate-authority instead.",
        config.server);
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
