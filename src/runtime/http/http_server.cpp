#include "runtime/http/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <mutex>
#include <optional>
#include <type_traits>

#include "runtime/http/http_server_session.h"
#include "runtime/http/http_server_state.h"
#include "runtime/logging.h"

namespace myop::runtime {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::optional<BindAddress> parse_bind_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  BindAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() >= 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || port.empty() || value > 65535)
    return std::nullopt;
  address.port = static_cast<std::uint16_t>(value);
  return address;
}

using http_server_detail::PostRoute;
using http_server_detail::ServerState;
using http_server_detail::Session;
using http_server_detail::TlsStream;

namespace {

bool transient_accept_error(const beast::error_code& error) {
  return error == asio::error::no_descriptors || error == asio::error::no_buffer_space ||
         error == asio::error::no_memory || error == boost::system::errc::too_many_files_open_in_system;
}

}  // namespace

struct HttpServer::Implementation {
  explicit Implementation(std::shared_ptr<ServerState> shared) : state(std::move(shared)) {}

  // Declared first, destroyed last: its pending handlers, and the connections they hold, go before it.
  asio::io_context context;
  asio::strand<asio::io_context::executor_type> acceptor_strand{context.get_executor()};
  tcp::acceptor acceptor{acceptor_strand};
  asio::steady_timer retry{acceptor_strand};
  asio::steady_timer room{acceptor_strand};
  std::shared_ptr<ServerState> state;
  std::shared_ptr<TlsContextProvider> tls;  // null: plain HTTP
  std::atomic<bool> stopping{false};
  std::atomic<unsigned> threads_running{0};
  unsigned threads = 1;
  mutable std::mutex failure_mutex;
  std::string failure;  // why it stopped listening
  std::chrono::steady_clock::time_point last_accept_warning{};

  // On the acceptor's strand.
  void accept() {
    if (!acceptor.is_open()) return;
    if (!state->may_accept()) return make_room();
    acceptor.async_accept(asio::make_strand(context), [this](beast::error_code error, tcp::socket socket) {
      on_accept(error, std::move(socket));
    });
  }

  // While at the cap: once a client waits in the listen backlog, close the connection idle the
  // longest when it has been idle for idle_at_capacity (its close resumes accepting, which takes the
  // client in); look again until accepting resumes (any connection that closes resumes it). Nobody
  // waiting, nothing is closed.
  void make_room() {
    if (!state->paused()) return;
    acceptor.async_wait(tcp::acceptor::wait_read, [this](beast::error_code error) {
      if (!error) room_for_waiting_client();
    });
  }

  void room_for_waiting_client() {
    if (!state->paused()) return;
    const auto now = std::chrono::steady_clock::now();
    auto next = now + state->timeouts.idle_at_capacity;
    if (const auto since = state->longest_idle_since()) {
      const auto due = *since + state->timeouts.idle_at_capacity;
      if (now >= due) {
        state->close_longest_idle();
        next = now + std::chrono::milliseconds(100);
      } else {
        next = due;
      }
    }
    room.expires_at(next);
    room.async_wait([this](beast::error_code error) {
      if (!error) make_room();
    });
  }

  void on_accept(beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (error == asio::error::connection_aborted) return accept();
    if (error) {
      if (!transient_accept_error(error)) {
        const std::string reason = "stopped listening: accept failed: " + error.message();
        log(spdlog::level::err, "HTTP server stopped listening",
            {{"server", state->name}, {"error", reason}});
        {
          std::lock_guard lock(failure_mutex);
          failure = reason;
        }
        beast::error_code ignored;
        acceptor.close(ignored);
        return;
      }
      // Out of descriptors or memory for now: try again shortly rather than spin.
      if (std::chrono::steady_clock::now() - last_accept_warning > std::chrono::minutes(1)) {
        last_accept_warning = std::chrono::steady_clock::now();
        log(spdlog::level::warn, "HTTP server cannot accept a connection now",
            {{"server", state->name}, {"error", error.message()}});
      }
      retry.expires_after(std::chrono::milliseconds(100));
      retry.async_wait([this](beast::error_code wait_error) {
        if (!wait_error) accept();
      });
      return;
    }
    beast::error_code peer_error;
    const asio::ip::address client = socket.remote_endpoint(peer_error).address();
    auto tls_context = tls ? tls->tls_context() : nullptr;
    if (peer_error || (tls && !tls_context)) {
      // Gone already, or nothing to serve it with.
    } else if (!state->connection_opened(client)) {
      state->rejected(Rejection::ClientConnectionLimit);
    } else if (!tls) {
      std::make_shared<Session<beast::tcp_stream>>(std::move(socket), client, state)->run();
    } else {
      std::make_shared<Session<TlsStream>>(std::move(socket), client, std::move(tls_context), state)->run();
    }
    // A socket no session took is closed here, at once.
    accept();
  }
};

HttpServer::HttpServer(std::string name) : name_(std::move(name)) {}

HttpServer::~HttpServer() {
  // stop() throws only if a lock or a join fails (std::system_error): nothing a destructor could report.
  try {
    stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch)
  }
}

void HttpServer::handle(const std::string& path, HttpHandler handler) {
  handlers_[path] = std::move(handler);
}

void HttpServer::handle(const std::string& path, std::function<HttpResponse()> handler) {
  handlers_[path] = [handler = std::move(handler)](const HttpRequest&) { return handler(); };
}

void HttpServer::handle_post(const std::string& path, HttpHandler handler,
                             std::optional<std::size_t> max_body) {
  post_handlers_[path] = {std::move(handler), max_body};
}

void HttpServer::export_metrics(prometheus::Registry& registry) {
  metrics_ = std::make_shared<HttpServerMetrics>(registry, name_);
}

base::Result<void, std::string> HttpServer::start(const std::string& bind_address) {
  auto address = parse_bind_address(bind_address);
  if (!address)
    return base::fail("invalid bind address \"" + bind_address + "\" for the " + name_ +
                      " server (want host:port)");
  if (tls_ && !tls_->tls_context())
    return base::fail("the " + name_ + " server has no TLS certificate to serve");
  if (limits_.max_connections == 0)
    return base::fail("the " + name_ + " server needs a connection limit above 0");

  auto state = std::make_shared<ServerState>(limits_.max_buffered_bytes);
  state->name = name_;
  state->get_routes = handlers_;
  for (const auto& [path, route] : post_handlers_)
    state->post_routes[path] = {route.handler, route.max_body.value_or(limits_.max_post_body)};
  state->limits = limits_;
  state->timeouts = timeouts_;
  state->metrics = metrics_;
  auto implementation = std::make_shared<Implementation>(state);
  implementation->tls = tls_;
  implementation->threads = std::max(1U, limits_.threads);

  beast::error_code error;
  asio::ip::address ip = address->host.empty() ? asio::ip::address(asio::ip::address_v6::any())
                                               : asio::ip::make_address(address->host, error);
  if (error) return base::fail("invalid host in bind address \"" + bind_address + "\": " + error.message());
  tcp::endpoint endpoint(ip, address->port);
  auto& acceptor = implementation->acceptor;
  acceptor.open(endpoint.protocol(), error);
  if (!error && ip.is_v6() && address->host.empty()) acceptor.set_option(asio::ip::v6_only(false), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error && address->host.empty()) {
    // No IPv6 on this host: fall back to IPv4 on all interfaces.
    error.clear();
    acceptor.close(error);
    endpoint = tcp::endpoint(asio::ip::address_v4::any(), address->port);
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
    if (!error) acceptor.bind(endpoint, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  }
  if (error)
    return base::fail("cannot listen on " + bind_address + " for the " + name_ +
                      " server: " + error.message());
  port_ = acceptor.local_endpoint().port();

  // A connection that closes at the cap resumes accepting, on the acceptor's strand.
  state->resume_accepting = [raw = implementation.get()] {
    asio::post(raw->acceptor_strand, [raw] { raw->accept(); });
  };
  asio::post(implementation->acceptor_strand, [raw = implementation.get()] { raw->accept(); });
  {
    std::lock_guard lock(mutex_);
    implementation_ = implementation;
  }
  implementation->threads_running = implementation->threads;
  for (unsigned i = 0; i < implementation->threads; ++i) {
    threads_.emplace_back([this, implementation] { serve_on_this_thread(*implementation); });
  }
  log(spdlog::level::info, tls_ ? "Serving HTTPS" : "Serving HTTP",
      {{"server", name_},
       {"address", bind_address},
       {"port", std::to_string(port_)},
       {"threads", std::to_string(implementation->threads)},
       {"maxConnections", std::to_string(limits_.max_connections)},
       {"maxBufferedBytes", std::to_string(limits_.max_buffered_bytes)}});
  return {};
}

// An exception out of a completion handler leaves io_context::run(); running it again goes on with
// the other handlers (the connection whose handler threw is gone with it). run() returns for good
// only when stop() stops the context, or when nothing is left to do: the acceptor closed and every
// connection ended, which health() then reports.
void HttpServer::serve_on_this_thread(Implementation& implementation) {
  for (;;) {
    try {
      implementation.context.run();
      break;
    } catch (const std::exception& exception) {
      implementation.state->exception();
      log(spdlog::level::err, "HTTP server caught an exception; serving on",
          {{"server", name_}, {"error", exception.what()}});
    } catch (...) {
      implementation.state->exception();
      log(spdlog::level::err, "HTTP server caught an exception; serving on", {{"server", name_}});
    }
  }
  --implementation.threads_running;
  if (!implementation.stopping) {
    log(spdlog::level::err, "HTTP server thread ended: nothing left to serve", {{"server", name_}});
  }
}

base::Result<void, std::string> HttpServer::health() const {
  std::shared_ptr<Implementation> implementation;
  {
    std::lock_guard lock(mutex_);
    implementation = implementation_;
  }
  if (!implementation || implementation->stopping) return {};
  {
    std::lock_guard lock(implementation->failure_mutex);
    if (!implementation->failure.empty()) return base::fail(implementation->failure);
  }
  const unsigned running = implementation->threads_running;
  if (running < implementation->threads) {
    return base::fail(std::to_string(implementation->threads - running) + " of " +
                      std::to_string(implementation->threads) + " serving threads ended");
  }
  return {};
}

bool HttpServer::serving() const {
  {
    std::lock_guard lock(mutex_);
    if (!implementation_ || implementation_->stopping) return false;
  }
  return health().ok();
}

void HttpServer::post(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (implementation_) asio::post(implementation_->context, std::move(task));
}

void HttpServer::stop() {
  std::shared_ptr<Implementation> implementation;
  {
    std::lock_guard lock(mutex_);
    implementation = std::move(implementation_);
  }
  if (!implementation) return;
  implementation->stopping = true;
  implementation->state->stop();
  asio::post(implementation->acceptor_strand, [raw = implementation.get()] {
    beast::error_code ignored;
    raw->acceptor.close(ignored);
    raw->retry.cancel();
    raw->room.cancel();
  });
  implementation->context.stop();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

}  // namespace myop::runtime
