#include "kube/connection_pool.h"

#include <openssl/ssl.h>
#include <poll.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/span.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <charconv>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>

namespace myop::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

bool is_ip_literal(const std::string& host) {
  boost::system::error_code error;
  asio::ip::make_address(host, error);
  return !error;
}

// Boost 1.74's parser compares a Content-Length with an empty limit (boost::none) as exceeding it.
constexpr std::uint64_t kNoBodyLimit = std::numeric_limits<std::uint64_t>::max();

// A stream's body is read in pieces of this size; a refusal's (a Status object) in smaller ones, and
// kept up to a limit.
constexpr std::size_t kStreamPiece = std::size_t{64} * 1024;
constexpr std::size_t kRefusalPiece = std::size_t{16} * 1024;
constexpr std::size_t kRefusalBodyLimit = std::size_t{1024} * 1024;

bool replayable(std::string_view method) { return method == "GET" || method == "HEAD"; }

template <typename Fields>
PoolAnswer answer_of(const http::response_header<Fields>& response) {
  PoolAnswer answer;
  answer.status = static_cast<int>(response.result_int());
  if (auto found = response.find(http::field::content_type); found != response.end())
    answer.content_type = std::string(found->value());
  if (auto found = response.find(http::field::retry_after); found != response.end())
    answer.retry_after = std::string(found->value());
  return answer;
}

PoolFailure failure_at(PoolFailure::Stage stage, boost::system::error_code code, const std::stop_token& stop,
                       Clock::time_point deadline) {
  PoolFailure failure{stage, code};
  failure.cancelled = stop.stop_requested();
  failure.timed_out = !failure.cancelled && (code == beast::error::timeout || Clock::now() >= deadline);
  return failure;
}

}  // namespace

struct ConnectionPool::Connection {
  explicit Connection(asio::ssl::context& tls) : stream(io, tls) {}

  asio::io_context io{1};
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  Clock::time_point idle_since{};
  // Each operation gets a new generation; a stop that arrives late finds a newer one and does nothing.
  std::uint64_t generation = 0;
  std::function<void()> cancel_current;

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream); }

  // Starts one asynchronous operation with `start(handler)` and runs this connection's io_context on the
  // calling thread until its handler ran. The stop token cancels it through a posted handler (Asio objects
  // are touched only by the thread running their io_context); the deadline is enforced by whoever set up
  // the operation (the tcp_stream's expiry, or a timer).
  template <typename Start>
  boost::system::error_code run(const std::stop_token& stop, std::function<void()> cancel, Start&& start) {
    boost::system::error_code result = asio::error::would_block;
    bool done = false;
    const std::uint64_t current = ++generation;
    cancel_current = std::move(cancel);
    std::forward<Start>(start)([&result, &done](boost::system::error_code error, auto&&...) {
      result = error;
      done = true;
    });
    {
      std::stop_callback on_stop(stop, [this, current] {
        asio::post(io, [this, current] {
          if (generation == current && cancel_current) cancel_current();
        });
      });
      io.restart();
      while (!done && io.run_one() != 0) {
      }
    }
    cancel_current = nullptr;
    if (!done) return asio::error::operation_aborted;
    return result;
  }

  // The same for an operation on the stream: a stop cancels the TCP stream's pending operations.
  template <typename Start>
  boost::system::error_code run(const std::stop_token& stop, Start&& start) {
    return run(
        stop, [this] { tcp().cancel(); }, std::forward<Start>(start));
  }

  // The server closed the idle connection (EOF or a TLS close_notify is readable), or sent something
  // unasked: either way it cannot carry a request.
  bool closed_by_peer() {
    if (buffer.size() != 0) return true;
    pollfd poll_fd{tcp().socket().native_handle(), POLLIN, 0};
    return ::poll(&poll_fd, 1, 0) != 0;
  }
};

ConnectionPool::ConnectionPool(PoolEndpoint endpoint, std::shared_ptr<asio::ssl::context> tls,
                               PoolOptions options)
    : endpoint_(std::move(endpoint)), tls_(std::move(tls)), options_(options) {
  boost::system::error_code error;
  const auto address = asio::ip::make_address(endpoint_.host, error);
  std::uint16_t port = 0;
  const char* end = endpoint_.port.data() + endpoint_.port.size();
  // Anything else (a name, or a port that is not a number) goes to the resolver, which reports it.
  if (!error && std::from_chars(endpoint_.port.data(), end, port).ptr == end && port != 0)
    literal_address_ = asio::ip::tcp::endpoint(address, port);
}

ConnectionPool::~ConnectionPool() = default;

std::size_t ConnectionPool::connections_opened() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

std::size_t ConnectionPool::idle_connections() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

std::unique_ptr<ConnectionPool::Connection> ConnectionPool::take_idle() {
  const auto now = Clock::now();
  std::unique_lock lock(mutex_);
  // The oldest first: connections below the most recently used one may have waited past
  // max_idle_time (those that served a burst, say the lists of a replica's start, and were never
  // needed again). Closed here, they do not keep their buffers and a socket the server has closed.
  const auto fresh = std::find_if(idle_.begin(), idle_.end(), [&](const auto& connection) {
    return now - connection->idle_since <= options_.max_idle_time;
  });
  std::vector<std::unique_ptr<Connection>> expired(std::make_move_iterator(idle_.begin()),
                                                   std::make_move_iterator(fresh));
  idle_.erase(idle_.begin(), fresh);
  if (!expired.empty()) {
    lock.unlock();
    expired.clear();  // closes the sockets outside the lock
    lock.lock();
  }
  while (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    if (now - connection->idle_since <= options_.max_idle_time && !connection->closed_by_peer())
      return connection;
    lock.unlock();
    connection.reset();  // closes the socket outside the lock
    lock.lock();
  }
  return nullptr;
}

void ConnectionPool::give_back(std::unique_ptr<Connection> connection) {
  connection->idle_since = Clock::now();
  connection->tcp().expires_never();
  std::lock_guard lock(mutex_);
  if (idle_.size() < options_.max_idle) idle_.push_back(std::move(connection));
}

std::optional<PoolFailure> ConnectionPool::open(Connection& connection, const std::stop_token& stop,
                                                Clock::time_point deadline) {
  std::vector<asio::ip::tcp::endpoint> endpoints;
  if (literal_address_) {
    endpoints.push_back(*literal_address_);
  } else if (auto error = resolve(connection, stop, deadline, endpoints)) {
    return failure_at(PoolFailure::Stage::Resolve, error, stop, deadline);
  }

  connection.tcp().expires_at(deadline);
  if (auto error = connection.run(stop, [&](auto handler) {
        connection.tcp().async_connect(
            endpoints, [handler](boost::system::error_code code, const asio::ip::tcp::endpoint&) mutable {
              handler(code);
            });
      }))
    return failure_at(PoolFailure::Stage::Connect, error, stop, deadline);
  connection.tcp().socket().set_option(asio::ip::tcp::no_delay(true));

  SSL* ssl = connection.stream.native_handle();
  if (!is_ip_literal(endpoint_.tls_name)) SSL_set_tlsext_host_name(ssl, endpoint_.tls_name.c_str());
  // Always verified: the chain (the context's trust anchors) and the name.
  connection.stream.set_verify_mode(asio::ssl::verify_peer);
  connection.stream.set_verify_callback(asio::ssl::host_name_verification(endpoint_.tls_name));
  if (auto error = connection.run(stop, [&](auto handler) {
        connection.stream.async_handshake(asio::ssl::stream_base::client, handler);
      }))
    return failure_at(PoolFailure::Stage::Handshake, error, stop, deadline);
  return std::nullopt;
}

// Asio's resolver runs getaddrinfo on a thread of its own per io_context, kept as long as the
// connection: only a host name comes here, never an IP address.
boost::system::error_code ConnectionPool::resolve(Connection& connection, const std::stop_token& stop,
                                                  Clock::time_point deadline,
                                                  std::vector<asio::ip::tcp::endpoint>& endpoints) {
  asio::ip::tcp::resolver resolver(connection.io);
  asio::steady_timer timer(connection.io, deadline);
  bool resolved = false;
  timer.async_wait([&resolver, &resolved](boost::system::error_code error) {
    if (!error && !resolved) resolver.cancel();
  });
  auto error = connection.run(
      stop,
      [&resolver, &timer] {
        resolver.cancel();
        timer.cancel();
      },
      [&](auto handler) {
        resolver.async_resolve(endpoint_.host, endpoint_.port,
                               [&, handler](boost::system::error_code code,
                                            const asio::ip::tcp::resolver::results_type& results) mutable {
                                 resolved = true;
                                 timer.cancel();
                                 for (const auto& entry : results) endpoints.push_back(entry.endpoint());
                                 handler(code);
                               });
      });
  // Let the cancelled timer's handler run before the timer and resolver go away.
  connection.io.restart();
  connection.io.poll();
  return error;
}

std::unique_ptr<ConnectionPool::Connection> ConnectionPool::new_connection() {
  {
    std::lock_guard lock(mutex_);
    ++opened_;
  }
  return std::make_unique<Connection>(*tls_);
}

std::variant<PoolAnswer, PoolFailure> ConnectionPool::send(const PoolRequest& request,
                                                           const std::stop_token& stop,
                                                           Clock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    auto connection = take_idle();
    const bool reused = connection != nullptr;
    if (!reused) {
      connection = new_connection();
      if (auto failure = open(*connection, stop, deadline)) return *failure;
    }
    ExchangeState state;
    auto result = exchange(*connection, request, stop, deadline, state);
    if (std::holds_alternative<PoolAnswer>(result)) {
      if (state.keep_alive) give_back(std::move(connection));
      return result;
    }
    const auto& failure = std::get<PoolFailure>(result);
    // A kept connection the server closed just as we took it: the request never reached it whole (a
    // failed write), or it is a GET the server had no answer for yet. Once more, on a new connection.
    const bool stale = reused && attempt == 0 && !failure.cancelled && !failure.timed_out &&
                       !state.answer_started &&
                       (failure.stage == PoolFailure::Stage::Write ||
                        (failure.stage == PoolFailure::Stage::Read && replayable(request.method)));
    if (!stale) return result;
  }
}

// Writes the request and reads the whole answer.
std::variant<PoolAnswer, PoolFailure> ConnectionPool::exchange(Connection& connection,
                                                               const PoolRequest& request,
                                                               const std::stop_token& stop,
                                                               Clock::time_point deadline,
                                                               ExchangeState& state) {
  state = ExchangeState{};
  if (auto failure = write_request(connection, request, stop, deadline)) return *failure;

  http::response_parser<http::string_body> parser;
  // Beast checks chunks against the limit as they arrive. A Content-Length it checks too, but when
  // bytes of the body came in the same read as the header, Boost 1.74's eager parse goes on past that
  // error and reads the whole body: so the header is read first and its Content-Length compared here.
  parser.body_limit(request.maximum_body_bytes);
  auto error = connection.run(stop, [&](auto handler) {
    http::async_read_header(
        connection.stream, connection.buffer, parser,
        [handler](boost::system::error_code code, std::size_t) mutable { handler(code); });
  });
  if (!error && !parser.is_done()) {
    if (const auto length = parser.content_length(); length && *length > request.maximum_body_bytes) {
      error = http::error::body_limit;
    } else {
      error = connection.run(stop, [&](auto handler) {
        http::async_read(connection.stream, connection.buffer, parser,
                         [handler](boost::system::error_code code, std::size_t) mutable { handler(code); });
      });
    }
  }
  if (error) {
    state.answer_started = parser.got_some();
    PoolFailure failure = failure_at(PoolFailure::Stage::Read, error, stop, deadline);
    failure.body_too_large = error == http::error::body_limit;
    return failure;
  }
  auto& response = parser.get();
  PoolAnswer answer = answer_of(response);
  answer.body = std::move(response.body());
  state.answer_started = true;
  state.keep_alive = response.keep_alive();
  return answer;
}

std::optional<PoolFailure> ConnectionPool::write_request(Connection& connection, const PoolRequest& request,
                                                         const std::stop_token& stop,
                                                         Clock::time_point deadline) {
  http::request<http::span_body<const char>> message;
  message.method_string(beast::string_view(request.method.data(), request.method.size()));
  if (endpoint_.path_prefix.empty()) {
    message.target(beast::string_view(request.target.data(), request.target.size()));
  } else {
    std::string target = endpoint_.path_prefix;
    target.append(request.target);
    message.target(target);
  }
  message.version(11);
  message.set(http::field::host, endpoint_.host_header);
  if (request.headers != nullptr)
    for (const auto& [name, value] : *request.headers) message.insert(name, value);
  if (!request.content_type.empty())
    message.set(http::field::content_type,
                beast::string_view(request.content_type.data(), request.content_type.size()));
  message.body() = beast::span<const char>(request.body.data(), request.body.size());
  message.prepare_payload();

  connection.tcp().expires_at(deadline);
  if (auto error = connection.run(stop, [&](auto handler) {
        http::async_write(connection.stream, message,
                          [handler](boost::system::error_code code, std::size_t) mutable { handler(code); });
      }))
    return failure_at(PoolFailure::Stage::Write, error, stop, deadline);
  return std::nullopt;
}

std::variant<PoolStreamEnd, PoolFailure> ConnectionPool::stream(
    const PoolRequest& request, const PoolChunkHandler& on_chunk,
    const std::function<void(const PoolAnswer& header)>& on_header, const std::stop_token& stop,
    Clock::time_point open_deadline, std::chrono::milliseconds idle_timeout) {
  // A stream holds its connection for as long as it lasts: always a new one, closed at the end.
  auto connection = new_connection();
  if (auto failure = open(*connection, stop, open_deadline)) return *failure;
  if (auto failure = write_request(*connection, request, stop, open_deadline)) return *failure;

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(kNoBodyLimit);  // a watch has no end
  if (auto error = connection->run(stop, [&](auto handler) {
        http::async_read_header(
            connection->stream, connection->buffer, parser,
            [handler](boost::system::error_code code, std::size_t) mutable { handler(code); });
      }))
    return failure_at(PoolFailure::Stage::Read, error, stop, open_deadline);

  PoolStreamEnd end;
  end.answer = answer_of(parser.get());
  if (on_header) on_header(end.answer);
  const bool refused = end.answer.status < 200 || end.answer.status > 299;
  // A refusal's body is a small Status object; a stream's body goes to the handler in pieces.
  std::string received;
  std::vector<char> piece(refused ? kRefusalPiece : kStreamPiece);
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    if (refused) {
      connection->tcp().expires_at(open_deadline);
    } else {
      connection->tcp().expires_after(idle_timeout);
    }
    auto error = connection->run(stop, [&](auto handler) {
      http::async_read_some(
          connection->stream, connection->buffer, parser,
          [handler](boost::system::error_code code, std::size_t) mutable { handler(code); });
    });
    if (error == http::error::need_buffer) error = {};
    if (error) {
      // A stream's body has no deadline, only the idle timeout (the expiry's timeout error).
      PoolFailure failure = failure_at(PoolFailure::Stage::Read, error, stop,
                                       refused ? open_deadline : Clock::time_point::max());
      failure.streaming = !refused;
      return failure;
    }
    const std::size_t got = piece.size() - parser.get().body().size;
    if (got == 0) continue;
    if (refused) {
      if (received.size() < kRefusalBodyLimit) received.append(piece.data(), got);
    } else if (!on_chunk(std::string_view(piece.data(), got))) {
      end.kind = PoolStreamEnd::Kind::StoppedByHandler;
      return end;
    }
  }
  if (refused) {
    end.kind = PoolStreamEnd::Kind::Refused;
    end.answer.body = std::move(received);
  }
  return end;
}

}  // namespace myop::kube
