#include "runtime/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/version.hpp>

#include <charconv>
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

struct Handlers {
  const std::map<std::string, HttpHandler>* get = nullptr;   // GET and HEAD
  const std::map<std::string, HttpHandler>* post = nullptr;  // POST
  std::size_t max_body = kMaxRequestBody;
  HttpTimeouts timeouts;
};
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: [TLS handshake], then requests until the peer closes, keep-alive ends or the
// deadline passes. `Stream` is beast::tcp_stream (HTTP) or TlsStream (HTTPS).
template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(tcp::socket socket, Handlers handlers) requires(!kTls)
      : stream_(std::move(socket)), handlers_(handlers) {}
  // The session holds the context it started with, so a reload never frees it under the session.
  Session(tcp::socket socket, std::shared_ptr<asio::ssl::context> context, Handlers handlers) requires kTls
      : context_(std::move(context)),
        stream_(std::move(socket), *context_),
        handlers_(handlers) {}

  void run() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(handlers_.timeouts.request);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code error) {
                                // A failed handshake (plain HTTP, an old protocol, an untrusting
                                // client) just ends the connection.
                                if (error) return self->close_socket();
                                self->read();
                              });
    } else {
      read();
    }
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(handlers_.max_body);
    // The first request of a connection must come within the request deadline; a kept-alive
    // connection may then wait idle for the next one up to the idle deadline.
    beast::get_lowest_layer(stream_).expires_after(served_ == 0 ? handlers_.timeouts.request
                                                                : handlers_.timeouts.idle);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code error, std::size_t) { self->on_read(error); });
  }

  void on_read(beast::error_code error) {
    if (error == http::error::body_limit) {
      // Say why, then close: the rest of the body is not read.
      response_ = {};
      response_.version(parser_->get().version());
      response_.keep_alive(false);
      response_.result(http::status::payload_too_large);
      response_.set(http::field::content_type, "text/plain; charset=utf-8");
      response_.body() = "request body larger than " + std::to_string(handlers_.max_body) + " bytes\n";
      response_.prepare_payload();
      return write_response();
    }
    if (error) return finish();
    ++served_;
    request_ = parser_->release();
    response_ = build_response();
    response_.prepare_payload();
    write_response();
  }

  void write_response() {
    http::async_write(stream_, response_,
                      [self = this->shared_from_this()](beast::error_code write_error, std::size_t) {
                        self->on_write(write_error);
                      });
  }

  http::response<http::string_body> build_response() {
    http::response<http::string_body> response;
    response.version(request_.version());
    response.keep_alive(request_.keep_alive());
    std::string path(request_.target());
    if (auto query = path.find('?'); query != std::string::npos) path.resize(query);
    const bool post = request_.method() == http::verb::post;
    const bool get = request_.method() == http::verb::get || request_.method() == http::verb::head;
    const auto& routes = post ? *handlers_.post : *handlers_.get;
    auto handler = routes.find(path);
    if (!(get || post) || handler == routes.end()) {
      const bool gets = handlers_.get->count(path) > 0;
      const bool posts = handlers_.post->count(path) > 0;
      if (!gets && !posts) {
        response.result(http::status::not_found);
        response.body() = "not found\n";
        return response;
      }
      response.result(http::status::method_not_allowed);
      response.set(http::field::allow, posts ? "POST" : "GET, HEAD");
      response.body() = "method not allowed\n";
      return response;
    }
    HttpRequest request{std::string(request_.method_string()), path,
                        std::string(request_[http::field::authorization]),
                        std::string(request_[http::field::content_type]), std::move(request_.body())};
    HttpResponse answer;
    try {
      answer = handler->second(request);
    } catch (const std::exception& exception) {
      answer = {500, "text/plain; charset=utf-8", std::string("internal error: ") + exception.what() + "\n"};
    }
    response.result(answer.status);
    response.set(http::field::content_type, answer.content_type);
    if (answer.status == 401) response.set(http::field::www_authenticate, "Bearer");
    if (request_.method() != http::verb::head) response.body() = std::move(answer.body);
    return response;
  }

  void on_write(beast::error_code error) {
    if (error) return close_socket();
    if (!response_.keep_alive()) return finish();
    read();
  }

  // The orderly end: TLS close_notify (bounded by the deadline), then the TCP half-close.
  void finish() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) { self->close_socket(); });
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  void close_socket() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  std::shared_ptr<asio::ssl::context> context_;  // null for plain HTTP
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  Handlers handlers_;
  std::size_t served_ = 0;  // requests read on this connection
};

}  // namespace

struct HttpServer::Implementation {
  asio::io_context context{1};
  tcp::acceptor acceptor{context};
  Handlers handlers;
  std::shared_ptr<TlsContextProvider> tls;  // null: plain HTTP

  void accept() {
    acceptor.async_accept(asio::make_strand(context), [this](beast::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!error) {
        if (!tls) {
          std::make_shared<Session<beast::tcp_stream>>(std::move(socket), handlers)->run();
        } else if (auto tls_context = tls->tls_context()) {
          std::make_shared<Session<TlsStream>>(std::move(socket), std::move(tls_context), handlers)->run();
        }
      }
      accept();
    });
  }
};

HttpServer::HttpServer(std::string name) : name_(std::move(name)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::handle(const std::string& path, HttpHandler handler) {
  handlers_[path] = std::move(handler);
}

void HttpServer::handle(const std::string& path, std::function<HttpResponse()> handler) {
  handlers_[path] = [handler = std::move(handler)](const HttpRequest&) { return handler(); };
}

void HttpServer::handle_post(const std::string& path, HttpHandler handler) {
  post_handlers_[path] = std::move(handler);
}

std::optional<std::string> HttpServer::start(const std::string& bind_address) {
  auto address = parse_bind_address(bind_address);
  if (!address)
    return "invalid bind address \"" + bind_address + "\" for the " + name_ + " server (want host:port)";
  implementation_ = std::make_unique<Implementation>();
  implementation_->handlers = {&handlers_, &post_handlers_, max_request_body_, timeouts_};
  implementation_->tls = tls_;
  if (tls_ && !tls_->tls_context()) return "the " + name_ + " server has no TLS certificate to serve";
  beast::error_code error;
  asio::ip::address ip = address->host.empty() ? asio::ip::address(asio::ip::address_v6::any())
                                               : asio::ip::make_address(address->host, error);
  if (error) return "invalid host in bind address \"" + bind_address + "\": " + error.message();
  tcp::endpoint endpoint(ip, address->port);
  auto& acceptor = implementation_->acceptor;
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
  implementation_->accept();
  thread_ = std::thread([this] {
    try {
      implementation_->context.run();
    } catch (const std::exception& exception) {
      log(spdlog::level::err, "HTTP server stopped on an exception",
          {{"server", name_}, {"error", exception.what()}});
    }
  });
  log(spdlog::level::info, tls_ ? "Serving HTTPS" : "Serving HTTP",
      {{"server", name_}, {"address", bind_address}, {"port", std::to_string(port_)}});
  return std::nullopt;
}

void HttpServer::stop() {
  if (!implementation_) return;
  asio::post(implementation_->context, [this] {
    beast::error_code ignored;
    implementation_->acceptor.close(ignored);
  });
  implementation_->context.stop();
  if (thread_.joinable()) thread_.join();
  implementation_.reset();
}

}  // namespace myop::runtime
