#include "runtime/http_server.h"

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

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Bytes read at once while waiting for a request's first byte.
constexpr std::size_t kFirstRead = 4096;
// The orderly end of a connection (TLS close_notify, or reading what the client still sends after a
// refusal, so that it gets the answer rather than a reset) takes at most this long and this much.
constexpr auto kClosingTime = std::chrono::seconds(2);
constexpr std::size_t kMostDrainedOnClose = 1 * kMiB;

struct PostRoute {
  HttpHandler handler;
  std::size_t max_body = 0;
};

// An exact path, else the longest registered prefix that ends in '/'.
template <typename Routes>
typename Routes::const_iterator find_route(const Routes& routes, const std::string& path) {
  auto found = routes.find(path);
  if (found != routes.end()) return found;
  for (auto it = routes.begin(); it != routes.end(); ++it) {
    const std::string& pattern = it->first;
    if (!pattern.empty() && pattern.back() == '/' && path.starts_with(pattern) &&
        (found == routes.end() || pattern.size() > found->first.size()))
      found = it;
  }
  return found;
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;
  // Closes the connection if it is still waiting for a request. Any thread.
  virtual void close_if_idle() = 0;
};

// What the acceptor and the connections of one server share. Each holds it, so it outlives them all.
struct ServerState {
  std::string name;
  std::map<std::string, HttpHandler> get_routes;  // GET and HEAD
  std::map<std::string, PostRoute> post_routes;
  HttpServerLimits limits;
  HttpTimeouts timeouts;
  std::shared_ptr<HttpServerMetrics> metrics;  // null: not exported
  RequestBudget budget;

  ServerState(std::size_t budget_bytes) : budget(budget_bytes) {}

  void rejected(Rejection reason) {
    if (metrics) metrics->rejected(reason);
  }
  void answered(unsigned status) {
    if (metrics) metrics->answered(status);
  }
  void exception() {
    if (metrics) metrics->exception();
  }
  void buffered_changed() {
    if (metrics) metrics->set_buffered_bytes(budget.in_use());
  }

  // The connection cap. False: at the cap, accepting stops until connection_closed() resumes it.
  bool may_accept() {
    std::lock_guard lock(mutex);
    if (open < limits.max_connections) return true;
    accepting_paused = true;
    return false;
  }
  // A new connection from `client`: false (and not counted) when the client holds its share already.
  bool connection_opened(const asio::ip::address& client) {
    std::lock_guard lock(mutex);
    auto& from_client = per_client[client];
    if (from_client >= limits.max_connections_per_client) {
      if (from_client == 0) per_client.erase(client);
      return false;
    }
    ++from_client;
    ++open;
    if (metrics) metrics->set_connections(open);
    return true;
  }
  void connection_closed(const asio::ip::address& client) {
    std::function<void()> resume;
    {
      std::lock_guard lock(mutex);
      if (auto found = per_client.find(client); found != per_client.end() && --found->second == 0)
        per_client.erase(found);
      --open;
      if (metrics) metrics->set_connections(open);
      if (accepting_paused && !stopping && open < limits.max_connections) {
        accepting_paused = false;
        resume = resume_accepting;
      }
    }
    if (resume) resume();
  }

  // A kept-alive connection waits for its next request: a ticket to give back when it comes.
  std::uint64_t became_idle(std::weak_ptr<Connection> connection) {
    std::lock_guard lock(mutex);
    const std::uint64_t ticket = next_ticket++;
    idle.emplace(ticket, IdleConnection{std::move(connection), std::chrono::steady_clock::now()});
    return ticket;
  }
  void no_longer_idle(std::uint64_t ticket) {
    std::lock_guard lock(mutex);
    idle.erase(ticket);
  }
  // Since when the connection idle the longest has waited; nullopt when none is idle.
  std::optional<std::chrono::steady_clock::time_point> longest_idle_since() {
    std::lock_guard lock(mutex);
    if (idle.empty()) return std::nullopt;
    return idle.begin()->second.since;
  }
  // Closes the connection idle the longest, to make room at the cap, unless one closed for room is
  // still closing (each makes room for one newcomer).
  void close_longest_idle() {
    std::weak_ptr<Connection> longest;
    {
      std::lock_guard lock(mutex);
      if (idle.empty() || closing_for_room) return;
      longest = std::move(idle.begin()->second.connection);
      idle.erase(idle.begin());
      closing_for_room = true;
    }
    if (auto connection = longest.lock()) {
      rejected(Rejection::ConnectionLimit);
      connection->close_if_idle();  // calls closed_for_room() once it has closed, or declined
    } else {
      closed_for_room();
    }
  }
  void closed_for_room() {
    std::lock_guard lock(mutex);
    closing_for_room = false;
  }
  bool paused() {
    std::lock_guard lock(mutex);
    return accepting_paused && !stopping;
  }
  void stop() {
    std::lock_guard lock(mutex);
    stopping = true;
    resume_accepting = nullptr;
  }

  std::mutex mutex;
  std::size_t open = 0;
  std::map<asio::ip::address, std::size_t> per_client;  // open connections by client address
  bool accepting_paused = false;
  bool closing_for_room = false;
  bool stopping = false;
  std::function<void()> resume_accepting;
  struct IdleConnection {
    std::weak_ptr<Connection> connection;
    std::chrono::steady_clock::time_point since;
  };
  std::uint64_t next_ticket = 0;
  std::map<std::uint64_t, IdleConnection> idle;  // by when they began to wait
};

// One connection, as drawn in http_server.h. `Stream` is beast::tcp_stream (HTTP) or TlsStream
// (HTTPS). Every step runs on the connection's strand.
template <typename Stream>
class Session final : public Connection {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  // `client`: the peer's address, counted by ServerState::connection_opened already.
  Session(tcp::socket socket, asio::ip::address client, std::shared_ptr<ServerState> state) requires(!kTls)
      : state_(std::move(state)),
        client_(std::move(client)),
        stream_(std::move(socket)),
        buffer_(buffer_size(*state_)) {}
  // The session holds the context it started with, so a reload never frees it under the session.
  Session(tcp::socket socket, asio::ip::address client, std::shared_ptr<asio::ssl::context> context,
          std::shared_ptr<ServerState> state) requires kTls : state_(std::move(state)),
                                                              client_(std::move(client)),
                                                              context_(std::move(context)),
                                                              stream_(std::move(socket), *context_),
                                                              buffer_(buffer_size(*state_)) {}
  ~Session() override {
    if (idle_ticket_) state_->no_longer_idle(*idle_ticket_);
    reservation_.release();
    state_->buffered_changed();
    if (closing_for_room_) state_->closed_for_room();
    state_->connection_closed(client_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void run() {
    // A new connection: its TLS handshake and its first request within one request deadline.
    lowest().expires_after(state_->timeouts.request);
    if constexpr (kTls) {
      stream_.async_handshake(asio::ssl::stream_base::server, [self = self()](beast::error_code error) {
        // A failed handshake (plain HTTP, an old protocol or cipher, an untrusting client) just
        // ends the connection.
        if (error) return self->on_read_error(error);
        self->wait_for_request();
      });
    } else {
      wait_for_request();
    }
  }

  void close_if_idle() override {
    asio::post(stream_.get_executor(), [self = self()] {
      if (!self->idle_ticket_) return self->state_->closed_for_room();  // busy again: keeps its place
      self->closing_for_room_ = true;
      self->lowest().cancel();
    });
  }

 private:
  static std::size_t buffer_size(const ServerState& state) {
    return state.limits.max_header_bytes + kFirstRead;
  }

  std::shared_ptr<Session> self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void wait_for_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<std::size_t>(state_->limits.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    // No limit until the route is known (Beast checks a Content-Length against it with the header).
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (buffer_.size() > 0) {  // pipelined: the next request has begun already
      if (served_ > 0) lowest().expires_after(state_->timeouts.request);
      return read_header();
    }
    // A new connection keeps the deadline of its accept; a kept-alive one may wait idle (and be
    // closed at the cap after a while: ServerState::close_longest_idle).
    if (served_ > 0) {
      lowest().expires_after(state_->timeouts.idle);
      idle_ticket_ = state_->became_idle(weak_from_this());
    }
    stream_.async_read_some(
        buffer_.prepare(std::min(kFirstRead, buffer_.max_size() - buffer_.size())),
        [self = self()](beast::error_code error, std::size_t bytes) { self->on_first_bytes(error, bytes); });
  }

  void on_first_bytes(beast::error_code error, std::size_t bytes) {
    if (idle_ticket_) state_->no_longer_idle(*idle_ticket_);
    idle_ticket_.reset();
    // The peer closed, the idle wait ended, or the connection was closed to make room. Only a new
    // connection that sent nothing in time broke a rule.
    if (error) return served_ == 0 ? on_read_error(error) : close_socket();
    buffer_.commit(bytes);
    // A request's deadline counts from its first byte.
    if (served_ > 0) lowest().expires_after(state_->timeouts.request);
    read_header();
  }

  void read_header() {
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = self()](beast::error_code error, std::size_t) { self->on_header(error); });
  }

  void on_header(beast::error_code error) {
    if (error == http::error::header_limit || error == http::error::buffer_overflow) {
      return refuse(
          http::status::request_header_fields_too_large, Rejection::HeaderTooLarge,
          "request header larger than " + std::to_string(state_->limits.max_header_bytes) + " bytes");
    }
    if (error) return on_read_error(error);
    const auto& header = parser_->get();
    path_ = std::string(header.target());
    if (auto query = path_.find('?'); query != std::string::npos) path_.resize(query);
    const bool post = header.method() == http::verb::post;
    const bool get = header.method() == http::verb::get || header.method() == http::verb::head;
    handler_ = nullptr;
    std::size_t limit = state_->limits.max_get_body;
    if (post) {
      if (auto route = find_route(state_->post_routes, path_); route != state_->post_routes.end()) {
        handler_ = &route->second.handler;
        limit = route->second.max_body;
      }
    } else if (get) {
      if (auto route = find_route(state_->get_routes, path_); route != state_->get_routes.end())
        handler_ = &route->second;
    }
    if (handler_ == nullptr) return refuse_route();

    const auto length = parser_->content_length();
    const BodyPlan plan =
        plan_body(length ? std::optional<std::uint64_t>(*length) : std::nullopt, parser_->chunked(), limit);
    if (plan.too_large) {
      return refuse(http::status::payload_too_large, Rejection::BodyTooLarge,
                    "request body larger than " + std::to_string(limit) + " bytes");
    }
    auto reservation = state_->budget.reserve(plan.reserve);
    if (!reservation) {
      return refuse(http::status::service_unavailable, Rejection::BufferBudget,
                    "the " + state_->name + " server holds too many request bytes now; retry", true);
    }
    reservation_ = std::move(*reservation);
    state_->buffered_changed();
    limit_ = limit;
    parser_->body_limit(limit);
    if (parser_->is_done()) return on_body({});
    http::async_read(stream_, buffer_, *parser_, [self = self()](beast::error_code body_error, std::size_t) {
      self->on_body(body_error);
    });
  }

  void on_body(beast::error_code error) {
    if (error == http::error::body_limit) {
      return refuse(http::status::payload_too_large, Rejection::BodyTooLarge,
                    "request body larger than " + std::to_string(limit_) + " bytes");
    }
    if (error) return on_read_error(error);
    ++served_;
    http::request<http::string_body> request = parser_->release();
    parser_.reset();
    response_ = answer(request);
    write_response();
  }

  http::response<http::string_body> answer(http::request<http::string_body>& request) {
    http::response<http::string_body> response;
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    HttpRequest call{std::string(request.method_string()), path_,
                     std::string(request[http::field::authorization]),
                     std::string(request[http::field::content_type]), std::move(request.body())};
    HttpResponse answer;
    try {
      answer = (*handler_)(call);
    } catch (const std::exception& exception) {
      state_->exception();
      log(spdlog::level::err, "HTTP handler failed",
          {{"server", state_->name}, {"path", path_}, {"error", exception.what()}});
      answer = {500, "text/plain; charset=utf-8", std::string("internal error: ") + exception.what() + "\n"};
    } catch (...) {
      state_->exception();
      log(spdlog::level::err, "HTTP handler failed", {{"server", state_->name}, {"path", path_}});
      answer = {500, "text/plain; charset=utf-8", "internal error\n"};
    }
    response.result(answer.status);
    response.set(http::field::content_type, answer.content_type);
    if (answer.status == 401) response.set(http::field::www_authenticate, "Bearer");
    if (request.method() != http::verb::head) response.body() = std::move(answer.body);
    response.prepare_payload();
    return response;
  }

  // No handler for the path and method: 404 or 405. A body that came with it is not read, so the
  // connection closes after the answer.
  void refuse_route() {
    const auto& header = parser_->get();
    http::response<http::string_body> response;
    response.version(header.version());
    const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    response.keep_alive(header.keep_alive() && !has_body);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    const bool gets = find_route(state_->get_routes, path_) != state_->get_routes.end();
    const bool posts = find_route(state_->post_routes, path_) != state_->post_routes.end();
    if (!gets && !posts) {
      response.result(http::status::not_found);
      response.body() = "not found\n";
    } else {
      response.result(http::status::method_not_allowed);
      response.set(http::field::allow, posts ? "POST" : "GET, HEAD");
      response.body() = "method not allowed\n";
    }
    response.prepare_payload();
    response_ = std::move(response);
    write_response();
  }

  // A request the limits refuse: say why, then close (what else the client sends is not read).
  void refuse(http::status status, Rejection reason, const std::string& message, bool retry_later = false) {
    state_->rejected(reason);
    http::response<http::string_body> response;
    response.version(parser_ && parser_->is_header_done() ? parser_->get().version() : 11);
    response.keep_alive(false);
    response.result(status);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    if (retry_later) response.set(http::field::retry_after, "1");
    response.body() = message + "\n";
    response.prepare_payload();
    response_ = std::move(response);
    write_response();
  }

  void write_response() {
    lowest().expires_after(state_->timeouts.request);
    state_->answered(response_.result_int());
    http::async_write(stream_, response_,
                      [self = self()](beast::error_code error, std::size_t) { self->on_write(error); });
  }

  void on_write(beast::error_code error) {
    reservation_.release();
    state_->buffered_changed();
    const bool keep_alive = response_.keep_alive();
    response_ = {};  // an idle connection holds no answer
    if (error) return close_socket();
    if (!keep_alive) return finish();
    wait_for_request();
  }

  void on_read_error(beast::error_code error) {
    // Beast closes the socket when the deadline passes.
    if (error == beast::error::timeout) state_->rejected(Rejection::Deadline);
    close_socket();
  }

  // The orderly end: TLS close_notify, or the TCP half-close and a bounded read of what the client is
  // still sending (so that it reads the answer before the connection is reset).
  void finish() {
    lowest().expires_after(kClosingTime);
    if constexpr (kTls) {
      stream_.async_shutdown([self = self()](beast::error_code) { self->close_socket(); });
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      drain();
    }
  }

  void drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = self()](beast::error_code error, std::size_t bytes) {
                              self->drained_ += bytes;
                              if (error || self->drained_ > kMostDrainedOnClose) return self->close_socket();
                              self->drain();
                            });
  }

  void close_socket() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
  }

  std::shared_ptr<ServerState> state_;
  const asio::ip::address client_;
  std::shared_ptr<asio::ssl::context> context_;  // null for plain HTTP
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string path_;
  const HttpHandler* handler_ = nullptr;
  std::size_t limit_ = 0;  // the body limit of the request being read
  RequestBudget::Reservation reservation_;
  http::response<http::string_body> response_;
  std::optional<std::uint64_t> idle_ticket_;  // set while waiting for a request
  std::size_t served_ = 0;                    // requests read on this connection
  std::size_t drained_ = 0;
  bool closing_for_room_ = false;  // closed by close_if_idle()
};

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

std::optional<std::string> HttpServer::start(const std::string& bind_address) {
  auto address = parse_bind_address(bind_address);
  if (!address)
    return "invalid bind address \"" + bind_address + "\" for the " + name_ + " server (want host:port)";
  if (tls_ && !tls_->tls_context()) return "the " + name_ + " server has no TLS certificate to serve";
  if (limits_.max_connections == 0) return "the " + name_ + " server needs a connection limit above 0";

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
  if (error) return "invalid host in bind address \"" + bind_address + "\": " + error.message();
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
  if (error) return "cannot listen on " + bind_address + " for the " + name_ + " server: " + error.message();
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
  return std::nullopt;
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

std::optional<std::string> HttpServer::health() const {
  std::shared_ptr<Implementation> implementation;
  {
    std::lock_guard lock(mutex_);
    implementation = implementation_;
  }
  if (!implementation || implementation->stopping) return std::nullopt;
  {
    std::lock_guard lock(implementation->failure_mutex);
    if (!implementation->failure.empty()) return implementation->failure;
  }
  const unsigned running = implementation->threads_running;
  if (running < implementation->threads) {
    return std::to_string(implementation->threads - running) + " of " +
           std::to_string(implementation->threads) + " serving threads ended";
  }
  return std::nullopt;
}

bool HttpServer::serving() const {
  {
    std::lock_guard lock(mutex_);
    if (!implementation_ || implementation_->stopping) return false;
  }
  return !health();
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
