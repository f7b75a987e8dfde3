#pragma once
// One connection of an HTTP server (runtime/http/http_server.h draws its states): [TLS handshake], then
// requests until the peer closes, keep-alive ends, a limit refuses one or a deadline passes. Every
// step runs on the connection's strand. Internal to the server: http_server.cpp starts them.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "runtime/http/http_server_state.h"
#include "runtime/logging.h"

namespace myop::runtime::http_server_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Bytes read at once while waiting for a request's first byte.
inline constexpr std::size_t kFirstRead = 4096;
// The orderly end of a connection (TLS close_notify, or reading what the client still sends after a
// refusal, so that it gets the answer rather than a reset) takes at most this long and this much.
inline constexpr auto kClosingTime = std::chrono::seconds(2);
inline constexpr std::size_t kMostDrainedOnClose = 1 * kMiB;

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

}  // namespace myop::runtime::http_server_detail
