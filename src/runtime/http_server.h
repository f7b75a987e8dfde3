#pragma once
// A small HTTP/1.1 server for probes, metrics and webhooks on Boost.Beast (cpprestsdk's http_listener
// is not meant for production serving). GET and HEAD, and POST for the paths registered with
// handle_post() (a body of at most kMaxRequestBody by default); one thread; every connection has a deadline
// so a stuck client cannot pin it. Plain HTTP, or HTTPS (TLS 1.2+) with serve_tls(): each new connection
// takes the provider's current context, so a reloaded certificate serves the next one.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "runtime/tls_context_provider.h"

namespace myop::runtime {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpRequest {
  std::string method;         // "GET", "HEAD" or "POST"
  std::string path;           // without the query string
  std::string authorization;  // the Authorization header, "" when absent
  std::string content_type;   // the Content-Type header, "" when absent
  std::string body;           // a POST's body
};

// The largest POST body read; a larger one is answered 413. The API server sends a conversion webhook
// every object of a list at once: 500 MyResources are about 1 MiB.
inline constexpr std::size_t kMaxRequestBody = 64U << 20U;

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// How long a connection may take. `request`: the TLS handshake and the first request of a
// connection, so a stuck client cannot pin it. `idle`: a kept-alive connection waiting for its next
// request. It is longer than the 90 s a Go client (the API server calling a webhook, Prometheus)
// keeps an idle connection, so the client closes it first: a server that closes first races the
// client's next request, which then fails with EOF (a POST, such as a conversion, is not retried).
struct HttpTimeouts {
  std::chrono::milliseconds request = std::chrono::seconds(10);
  std::chrono::milliseconds idle = std::chrono::seconds(120);
};

struct BindAddress {
  std::string host;  // "" = all interfaces
  std::uint16_t port = 0;
};

// ":8080" -> all interfaces, "127.0.0.1:0" -> loopback on any free port, "[::1]:9000" -> IPv6.
// nullopt when the text is not an address.
std::optional<BindAddress> parse_bind_address(const std::string& text);

class HttpServer {
 public:
  explicit HttpServer(std::string name);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Register before start(). Paths match exactly (query strings are ignored).
  void handle(const std::string& path, HttpHandler handler);
  void handle(const std::string& path, std::function<HttpResponse()> handler);
  // A path that takes POST only.
  void handle_post(const std::string& path, HttpHandler handler);
  // The largest POST body read (413 beyond it). Call before start().
  void max_request_body(std::size_t bytes) { max_request_body_ = bytes; }

  // Call before start().
  void timeouts(HttpTimeouts timeouts) { timeouts_ = timeouts; }
  // Serve HTTPS with the provider's certificate instead of plain HTTP. Call before start().
  void serve_tls(std::shared_ptr<TlsContextProvider> provider) { tls_ = std::move(provider); }
  bool serves_tls() const { return tls_ != nullptr; }

  // Binds and starts serving on a thread. Returns an error message when the address cannot be used.
  std::optional<std::string> start(const std::string& bind_address);
  // The bound port (useful with port 0).
  std::uint16_t port() const { return port_; }
  void stop();

 private:
  struct Implementation;
  std::string name_;
  std::map<std::string, HttpHandler> handlers_;       // GET and HEAD
  std::map<std::string, HttpHandler> post_handlers_;  // POST
  std::shared_ptr<TlsContextProvider> tls_;
  HttpTimeouts timeouts_;
  std::unique_ptr<Implementation> implementation_;
  std::thread thread_;
  std::uint16_t port_ = 0;
  std::size_t max_request_body_ = kMaxRequestBody;
};

}  // namespace myop::runtime
