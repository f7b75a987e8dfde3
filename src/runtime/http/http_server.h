#pragma once
// A small HTTP/1.1 server for probes, metrics and webhooks on Boost.Beast (cpprestsdk's http_listener
// is not meant for production serving). GET and HEAD, and POST for the paths registered with
// handle_post(). Plain HTTP, or HTTPS with serve_tls() (runtime/certificates/tls_certificate.h: TLS 1.2+,
// ECDHE with AEAD ciphers, no session resumption): each new connection takes the provider's current context,
// so a reloaded certificate serves the next one.
//
// It holds under abuse from anyone who can reach its port (runtime/http/http_server_limits.h has the
// numbers and the memory bound they make; http_server_test.cpp proves each):
//   - connections: at most max_connections; at the cap it stops accepting until one closes (new ones
//     wait in the kernel's listen backlog); while one waits, it closes a kept-alive connection idle
//     for a while to make room. At most max_connections_per_client from one address: beyond, a new connection
//     from it is closed at once, so one client cannot take the others' share;
//   - bytes: a header of at most max_header_bytes (431); a body of at most its path's limit (413:
//     a POST path's own or max_post_body, a GET's max_get_body), read only into a reservation of the
//     server's budget of buffered bytes (503 with Retry-After when it does not fit, the body unread);
//   - time: each request has an absolute deadline from its first byte to its last (headers and body;
//     a new connection's from its accept, TLS handshake included), apart from the idle wait for the
//     next request of a kept-alive connection (HttpTimeouts);
//   - threads: a fixed pool runs the connections (each on a strand), so a slow handler holds one
//     thread, never the server. An exception out of a handler is a 500; one out of any completion
//     handler is logged and counted, and the thread goes on. health() reports a server that can no
//     longer serve (it stopped listening, or a thread ended): the manager's /healthz fails with it.
//
// The state of a connection:
//
//   accept --[TLS handshake]--> waiting for a request --first byte--> reading the header
//       ^                         (idle; closed at its          |  431 / 413 / 503: answer, close
//       |                          deadline, or at the cap)    v
//       |                                              reading the body (reserved) -- 413: answer, close
//       |                                                      |
//       +---- keep-alive <-- writing the response <-- handler -+
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "runtime/certificates/tls_context_provider.h"
#include "runtime/http/http_server_limits.h"
#include "runtime/http/http_server_metrics.h"

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

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// How long a connection may take. `request`: a request from its first byte to its last (headers and
// body), and the writing of its response; a new connection's first request counts from the accept,
// its TLS handshake included. `idle`: a kept-alive connection waiting for the first byte of its next
// request. It is longer than the 90 s a Go client (the API server calling a webhook, Prometheus)
// keeps an idle connection, so the client closes it first: a server that closes first races the
// client's next request, which then fails with EOF (a POST, such as a conversion, is not retried).
// `idle_at_capacity`: at the connection cap, while a new connection waits in the listen backlog, a
// kept-alive connection idle this long is closed to make room (the one idle the longest first). A client that
// is busy reuses the connection it used last (Go's transport does), so the one closed is rarely in use.
struct HttpTimeouts {
  std::chrono::milliseconds request = std::chrono::seconds(10);
  std::chrono::milliseconds idle = std::chrono::seconds(120);
  std::chrono::milliseconds idle_at_capacity = std::chrono::seconds(10);
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

  // Register before start(). Paths match exactly (query strings are ignored); a path that ends in
  // '/' also matches every path under it (the longest such match wins).
  void handle(const std::string& path, HttpHandler handler);
  void handle(const std::string& path, std::function<HttpResponse()> handler);
  // A path that takes POST only, with a body of at most `max_body` bytes (default: the limits'
  // max_post_body).
  void handle_post(const std::string& path, HttpHandler handler, std::optional<std::size_t> max_body = {});

  // Call before start().
  void limits(const HttpServerLimits& limits) { limits_ = limits; }
  const HttpServerLimits& limits() const { return limits_; }
  void timeouts(HttpTimeouts timeouts) { timeouts_ = timeouts; }
  // Export the server's metrics (myoperator_http_*{server=<name>}) to `registry`.
  void export_metrics(prometheus::Registry& registry);
  // Serve HTTPS with the provider's certificate instead of plain HTTP.
  void serve_tls(std::shared_ptr<TlsContextProvider> provider) { tls_ = std::move(provider); }
  bool serves_tls() const { return tls_ != nullptr; }
  const std::shared_ptr<TlsContextProvider>& tls() const { return tls_; }

  // Binds and starts serving on limits().threads threads. Fails with a message when the address
  // cannot be used.
  base::Result<void, std::string> start(const std::string& bind_address);
  // The bound port (useful with port 0).
  std::uint16_t port() const { return port_; }
  // Whether it was started and is still accepting and serving (health() has nothing to say).
  bool serving() const;
  // Fails with why a started server can no longer serve (it stopped listening, or a serving thread
  // ended); passes while it serves, before start() and after stop().
  base::Result<void, std::string> health() const;
  // Runs `task` on one of the server's threads, as a completion handler (tests: an exception that
  // escapes one).
  void post(std::function<void()> task);
  void stop();

  const std::string& name() const { return name_; }

 private:
  struct Implementation;
  struct PostRoute {
    HttpHandler handler;
    std::optional<std::size_t> max_body;
  };
  void serve_on_this_thread(Implementation& implementation);

  std::string name_;
  std::map<std::string, HttpHandler> handlers_;     // GET and HEAD
  std::map<std::string, PostRoute> post_handlers_;  // POST
  std::shared_ptr<TlsContextProvider> tls_;
  HttpServerLimits limits_;
  HttpTimeouts timeouts_;
  std::shared_ptr<HttpServerMetrics> metrics_;
  mutable std::mutex mutex_;  // guards implementation_: health() is asked from other threads
  std::shared_ptr<Implementation> implementation_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
};

}  // namespace myop::runtime
