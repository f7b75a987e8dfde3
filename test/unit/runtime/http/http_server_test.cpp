#include <catch2/catch.hpp>

#include <boost/asio/ssl/context.hpp>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/certificates/tls_certificate.h"
#include "runtime/http/http_server.h"
#include "support/eventually.h"
#include "support/http_get.h"
#include "support/https_get.h"
#include "support/metrics_reader.h"
#include "support/raw_http.h"

using namespace myop::runtime;
using myop::runtime::testing::http_request;

TEST_CASE("bind addresses parse like Go's", "[runtime][http_server]") {
  CHECK(parse_bind_address(":8080")->host.empty());
  CHECK(parse_bind_address(":8080")->port == 8080);
  CHECK(parse_bind_address("127.0.0.1:0")->host == "127.0.0.1");
  CHECK(parse_bind_address("[::1]:9000")->host == "::1");
  CHECK(parse_bind_address("[::1]:9000")->port == 9000);
  CHECK_FALSE(parse_bind_address("8080"));
  CHECK_FALSE(parse_bind_address(":http"));
  CHECK_FALSE(parse_bind_address(":70000"));
}

TEST_CASE("the server answers registered paths and refuses the rest", "[runtime][http_server]") {
  HttpServer server("test");
  int calls = 0;
  server.handle("/hello", [&] {
    ++calls;
    return HttpResponse{200, "text/plain", "hi"};
  });
  server.handle("/throws", []() -> HttpResponse { throw std::runtime_error("oops"); });
  REQUIRE(server.start("127.0.0.1:0").ok());
  REQUIRE(server.port() != 0);

  auto answer = http_request(server.port(), "/hello?verbose=1");
  CHECK(answer.status == 200);
  CHECK(answer.body == "hi");
  CHECK(answer.content_type == "text/plain");
  CHECK(http_request(server.port(), "/missing").status == 404);
  CHECK(http_request(server.port(), "/hello", boost::beast::http::verb::post).status == 405);
  CHECK(http_request(server.port(), "/throws").status == 500);
  CHECK(calls == 1);
  server.stop();
}

TEST_CASE("a POST path gets the body and content type and only POST, and a body past the limit is 413",
          "[runtime][http_server]") {
  using boost::beast::http::verb;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_post_body = 1024;
  server.limits(limits);
  HttpRequest seen;
  server.handle_post("/convert", [&](const HttpRequest& request) {
    seen = request;
    return HttpResponse{200, "application/json", R"({"echo":)" + request.body + "}"};
  });
  server.handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok"}; });
  REQUIRE(server.start("127.0.0.1:0").ok());

  auto answer = http_request(server.port(), "/convert", verb::post, "", R"({"a":1})", "application/json");
  CHECK(answer.status == 200);
  CHECK(answer.body == R"({"echo":{"a":1}})");
  CHECK(seen.method == "POST");
  CHECK(seen.path == "/convert");
  CHECK(seen.content_type == "application/json");
  CHECK(seen.body == R"({"a":1})");

  // Each path answers its own methods only, and says which.
  CHECK(http_request(server.port(), "/convert").status == 405);
  CHECK(http_request(server.port(), "/healthz", verb::post, "", "x").status == 405);
  CHECK(http_request(server.port(), "/other", verb::post, "", "x").status == 404);

  auto too_large = http_request(server.port(), "/convert", verb::post, "", std::string(4096, 'x'));
  CHECK(too_large.status == 413);
  CHECK_THAT(too_large.body, Catch::Contains("larger than 1024 bytes"));
  // The server goes on serving.
  CHECK(http_request(server.port(), "/convert", verb::post, "", "[]").status == 200);
  server.stop();
}

namespace {

// Two GETs of /hello on one kept-alive connection, `pause` apart; the second answer's status, or 0
// when the server had closed the connection meanwhile.
unsigned second_request_status(std::uint16_t port, std::chrono::milliseconds pause) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context context;
  beast::tcp_stream stream(context);
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> request{http::verb::get, "/hello", 11};
  request.set(http::field::host, "127.0.0.1");
  request.keep_alive(true);
  beast::flat_buffer buffer;
  http::write(stream, request);
  http::response<http::string_body> first;
  http::read(stream, buffer, first);
  if (first.result_int() != 200 || !first.keep_alive()) return 0;
  std::this_thread::sleep_for(pause);
  beast::error_code error;
  http::write(stream, request, error);
  http::response<http::string_body> second;
  if (!error) http::read(stream, buffer, second, error);
  return error ? 0 : second.result_int();
}

}  // namespace

// A Go client (the API server calling the conversion webhook) keeps an idle connection for 90 s and
// does not retry a POST that meets a closing connection: the server must not close it first.
TEST_CASE("a kept-alive connection waits idle up to the idle deadline, past the request deadline",
          "[runtime][http_server]") {
  auto serve = [](HttpTimeouts timeouts) {
    auto server = std::make_unique<HttpServer>("test");
    server->handle("/hello", [] { return HttpResponse{200, "text/plain", "hi"}; });
    server->timeouts(timeouts);
    REQUIRE(server->start("127.0.0.1:0").ok());
    return server;
  };
  const auto long_idle = serve({std::chrono::milliseconds(200), std::chrono::seconds(30)});
  CHECK(second_request_status(long_idle->port(), std::chrono::milliseconds(600)) == 200);
  long_idle->stop();
  const auto short_idle = serve({std::chrono::milliseconds(200), std::chrono::milliseconds(200)});
  CHECK(second_request_status(short_idle->port(), std::chrono::milliseconds(600)) == 0);
  short_idle->stop();
  CHECK(HttpTimeouts{}.idle > std::chrono::seconds(90));
}

TEST_CASE("a port in use is an error value, not a crash", "[runtime][http_server]") {
  HttpServer first("first");
  REQUIRE(first.start("127.0.0.1:0").ok());
  HttpServer second("second");
  auto started = second.start("127.0.0.1:" + std::to_string(first.port()));
  REQUIRE_FALSE(started.ok());
  CHECK_THAT(started.error(), Catch::Contains("cannot listen"));
  CHECK_FALSE(second.start("nonsense").ok());
}

namespace {

// A provider whose certificate the test switches, as a certificate reload does.
class SwitchableTls final : public TlsContextProvider {
 public:
  void use(const CertificatePair& pair) {
    auto context = make_server_tls_context(pair);
    REQUIRE(context.ok());
    std::lock_guard lock(mutex_);
    context_ = *context;
  }
  std::shared_ptr<boost::asio::ssl::context> tls_context() override {
    std::lock_guard lock(mutex_);
    return context_;
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
};

CertificatePair self_signed() {
  auto pair = generate_self_signed_certificate({"localhost", "127.0.0.1"});
  REQUIRE(pair.ok());
  return *pair;
}

}  // namespace

TEST_CASE(
    "over HTTPS: verified by its CA, each new connection gets the current certificate, plain HTTP and "
    "TLS 1.1 are refused",
    "[runtime][http_server][tls]") {
  using myop::runtime::testing::https_get;
  const CertificatePair first = self_signed();
  const CertificatePair second = self_signed();
  auto tls = std::make_shared<SwitchableTls>();
  tls->use(first);
  HttpServer server("secure");
  server.serve_tls(tls);
  server.handle("/metrics", [](const HttpRequest& request) {
    return HttpResponse{200, "text/plain", "method=" + request.method + " auth=" + request.authorization};
  });
  REQUIRE(server.start("127.0.0.1:0").ok());

  auto answer = https_get(server.port(), "Bearer abc", first.certificate_pem);
  INFO(answer.error);
  REQUIRE(answer.connected);
  CHECK(answer.status == 200);
  CHECK(answer.body == "method=GET auth=Bearer abc");
  CHECK(answer.served_serial == inspect_certificate_pair(first)->serial);

  // Another CA does not verify it: the client really checks.
  CHECK_FALSE(https_get(server.port(), "", second.certificate_pem).connected);

  tls->use(second);
  auto rotated = https_get(server.port(), "", second.certificate_pem);
  INFO(rotated.error);
  CHECK(rotated.connected);
  CHECK(rotated.status == 200);
  CHECK(rotated.served_serial == inspect_certificate_pair(second)->serial);

  // Below TLS 1.2: no handshake.
  auto old_protocol = https_get(server.port(), "", "", TLS1_1_VERSION);
  CHECK_FALSE(old_protocol.connected);

  // Plain HTTP to the HTTPS port gets no HTTP answer.
  CHECK_THROWS(http_request(server.port(), "/metrics"));
  server.stop();
}

// Abuse: each limit of runtime/http/http_server_limits.h, from outside, with a client that sends exactly
// the bytes it wants when it wants (raw_http.h).
namespace {

using myop::runtime::testing::get_request;
using myop::runtime::testing::post_header;
using myop::runtime::testing::RawConnection;
using myop::runtime::testing::RawResponse;

double rejected(prometheus::Registry& registry, const std::string& reason) {
  return myop::runtime::testing::metric_value(registry, "myoperator_http_requests_rejected_total",
                                              {{"server", "test"}, {"reason", reason}})
      .value_or(-1);
}

double gauge(prometheus::Registry& registry, const std::string& name) {
  return myop::runtime::testing::metric_value(registry, name, {{"server", "test"}}).value_or(-1);
}

HttpResponse echo(const HttpRequest& request) {
  return {200, "text/plain", std::to_string(request.body.size())};
}

}  // namespace

TEST_CASE("each path has its body limit: 413 from the header alone, GETs a few KiB, chunked bodies counted",
          "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_post_body = 64 * kKiB;
  limits.max_get_body = 1 * kKiB;
  server.limits(limits);
  server.export_metrics(registry);
  server.handle_post("/small", echo, 1024);
  server.handle_post("/large", echo);
  server.handle("/healthz", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());

  {
    // Refused from the header: the body is never sent, and the answer comes all the same.
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/small", 2048)));
    auto answer = client.read_response();
    REQUIRE(answer);
    CHECK(answer->status == 413);
    CHECK_THAT(answer->body, Catch::Contains("larger than 1024 bytes"));
    CHECK(answer->has_header("Connection: close"));
    CHECK(client.closed_by_peer(std::chrono::seconds(5)));
  }
  {
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/large", 2048) + std::string(2048, 'x')));
    auto answer = client.read_response();
    REQUIRE(answer);
    CHECK(answer->status == 200);
    CHECK(answer->body == "2048");
  }
  {
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/large", 64 * kKiB + 1)));
    auto answer = client.read_response();
    REQUIRE(answer);
    CHECK(answer->status == 413);
  }
  {
    // Chunked: the size is known only while reading; 16 chunks of 8 KiB pass the 64 KiB limit.
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/large", std::nullopt)));
    std::optional<RawResponse> answer;
    for (int chunk = 0; chunk < 16 && !answer; ++chunk) {
      if (!client.send("2000\r\n" + std::string(8192, 'x') + "\r\n")) break;
      if (chunk >= 8) answer = client.read_response(std::chrono::milliseconds(200));
    }
    if (!answer) answer = client.read_response();
    REQUIRE(answer);
    CHECK(answer->status == 413);
  }
  {
    // A GET may carry a small body (read and dropped), not a large one.
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/healthz", 100, "GET") + std::string(100, 'x')));
    auto small = client.read_response();
    REQUIRE(small);
    CHECK(small->status == 200);
    REQUIRE(client.send(post_header("/healthz", 1025, "GET")));
    auto large = client.read_response();
    REQUIRE(large);
    CHECK(large->status == 413);
  }
  CHECK(rejected(registry, "body_too_large") == 4);
  CHECK(http_request(server.port(), "/healthz").status == 200);  // and it goes on serving
  server.stop();
}

TEST_CASE("a header larger than the limit is 431", "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_header_bytes = 4 * kKiB;
  server.limits(limits);
  server.export_metrics(registry);
  server.handle("/hello", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());
  RawConnection client(server.port());
  REQUIRE(client.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(16 * kKiB, 'a') +
                      "\r\n\r\n"));
  auto answer = client.read_response();
  REQUIRE(answer);
  CHECK(answer->status == 431);
  CHECK(rejected(registry, "header_too_large") == 1);
  CHECK(http_request(server.port(), "/hello").status == 200);
  server.stop();
}

TEST_CASE("a body that does not fit into the budget is 503 with Retry-After, unread, until room is made",
          "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_post_body = 8 * kKiB;
  limits.max_buffered_bytes = 10 * kKiB;
  server.limits(limits);
  server.export_metrics(registry);
  server.handle_post("/convert", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());

  // The first client reserves 8 KiB and sends half of it: the budget holds the whole.
  RawConnection slow(server.port());
  REQUIRE(slow.send(post_header("/convert", 8 * kKiB) + std::string(4 * kKiB, 'x')));
  REQUIRE(myop::testing::eventually(
      [&] { return gauge(registry, "myoperator_http_buffered_request_bytes") == 8 * kKiB; }));

  RawConnection refused(server.port());
  REQUIRE(refused.send(post_header("/convert", 4 * kKiB)));
  auto busy = refused.read_response();
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(busy->has_header("Retry-After: 1"));
  CHECK(rejected(registry, "buffer_budget") == 1);
  // What fits still passes.
  RawConnection small(server.port());
  REQUIRE(small.send(post_header("/convert", 2 * kKiB) + std::string(2 * kKiB, 'y')));
  auto fits = small.read_response();
  REQUIRE(fits);
  CHECK(fits->status == 200);

  // The first request ends: its reservation is back, and the refused size fits now.
  REQUIRE(slow.send(std::string(4 * kKiB, 'x')));
  auto done = slow.read_response();
  REQUIRE(done);
  CHECK(done->status == 200);
  CHECK(done->body == "8192");
  REQUIRE(myop::testing::eventually(
      [&] { return gauge(registry, "myoperator_http_buffered_request_bytes") == 0; }));
  RawConnection again(server.port());
  REQUIRE(again.send(post_header("/convert", 4 * kKiB) + std::string(4 * kKiB, 'z')));
  auto retried = again.read_response();
  REQUIRE(retried);
  CHECK(retried->status == 200);
  server.stop();
}

TEST_CASE("a request has an absolute deadline from its first byte: a slow drip of header or body is cut",
          "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  server.timeouts({std::chrono::milliseconds(500), std::chrono::seconds(30)});
  server.export_metrics(registry);
  server.handle_post("/convert", echo);
  server.handle("/hello", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());

  // Each drip would take 6 s (a byte every 100 ms); the server cuts it at 0.5 s.
  const auto drip = [](RawConnection& client, const std::string& bytes) {
    const auto start = std::chrono::steady_clock::now();
    for (char byte : bytes) {
      if (!client.send(std::string(1, byte)) || client.closed_by_peer(std::chrono::milliseconds(100)))
        return std::chrono::steady_clock::now() - start;
    }
    return std::chrono::steady_clock::duration::max();
  };
  const std::string header =
      "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: " + std::string(60, 'd') + "\r\n\r\n";
  {
    RawConnection client(server.port());
    CHECK(drip(client, header) < std::chrono::seconds(3));
  }
  {
    // The body too: the header in one go, the body a byte at a time.
    RawConnection client(server.port());
    REQUIRE(client.send(post_header("/convert", 60)));
    CHECK(drip(client, std::string(60, 'b')) < std::chrono::seconds(3));
  }
  {
    // A kept-alive connection waits idle past the request deadline, then its next request has one.
    RawConnection client(server.port());
    REQUIRE(client.send(get_request("/hello")));
    REQUIRE(client.read_response());
    CHECK_FALSE(client.closed_by_peer(std::chrono::milliseconds(1000)));
    CHECK(drip(client, header) < std::chrono::seconds(3));
  }
  {
    // A new connection that sends nothing is closed at the deadline too.
    RawConnection client(server.port());
    CHECK(client.closed_by_peer(std::chrono::seconds(3)));
  }
  // Counted once the connection is closed: the client may see the close first.
  CHECK(myop::testing::eventually([&] { return rejected(registry, "deadline") == 4; }));
  CHECK(http_request(server.port(), "/hello").status == 200);
  server.stop();
}

TEST_CASE("at the connection cap it stops accepting until one closes, and closes idle connections for room",
          "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_connections = 3;
  server.limits(limits);
  server.timeouts({.idle_at_capacity = std::chrono::milliseconds(300)});
  server.export_metrics(registry);
  std::atomic<int> handled{0};
  server.handle("/hello", [&](const HttpRequest&) {
    ++handled;
    return HttpResponse{200, "text/plain", "hi"};
  });
  REQUIRE(server.start("127.0.0.1:0").ok());

  // Three connections busy with a request they drip (not idle: none can be closed for room).
  std::vector<std::unique_ptr<RawConnection>> busy;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(std::make_unique<RawConnection>(server.port()));
    REQUIRE(busy.back()->send("GET /hello HTTP/1.1\r\n"));
  }
  REQUIRE(myop::testing::eventually([&] { return gauge(registry, "myoperator_http_connections") == 3; }));
  // A fourth waits in the listen backlog: not accepted, not answered (within a second), never a fourth
  // connection held.
  RawConnection waiting(server.port());
  REQUIRE(waiting.send(get_request("/hello")));
  CHECK_FALSE(waiting.read_response(std::chrono::seconds(1)));
  CHECK(gauge(registry, "myoperator_http_connections") == 3);
  CHECK(handled == 0);
  // One busy connection ends: the fourth is accepted and answered.
  busy[0]->close();
  auto answer = waiting.read_response();
  REQUIRE(answer);
  CHECK(answer->status == 200);

  // The other two finish their requests and stay open, idle, as the fourth does. At the cap, a
  // newcomer in the backlog makes the server close one of them (the one idle the longest) once it has
  // been idle for 300 ms; nobody else waiting, the other two stay.
  for (int i = 1; i < 3; ++i) {
    REQUIRE(busy[i]->send("Host: x\r\n\r\n"));
    REQUIRE(busy[i]->read_response());
  }
  RawConnection newcomer(server.port());
  REQUIRE(newcomer.send(get_request("/hello")));
  auto served = newcomer.read_response();
  REQUIRE(served);
  CHECK(served->status == 200);
  CHECK(rejected(registry, "connection_limit") == 1);
  int closed = 0;
  for (RawConnection* idle : {&waiting, busy[1].get(), busy[2].get()})
    closed += idle->closed_by_peer(std::chrono::milliseconds(500)) ? 1 : 0;
  CHECK(closed == 1);
  CHECK(rejected(registry, "connection_limit") == 1);
  server.stop();
}

TEST_CASE("one client address gets at most its share of the connections, another client still gets in",
          "[runtime][http_server][limits]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.max_connections = 10;
  limits.max_connections_per_client = 2;
  server.limits(limits);
  server.export_metrics(registry);
  server.handle("/hello", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 2; ++i) {
    flood.push_back(std::make_unique<RawConnection>(server.port(), "127.0.0.2"));
    REQUIRE(flood.back()->send("GET /hello HTTP/1.1\r\n"));  // busy: dripping a request
  }
  REQUIRE(myop::testing::eventually([&] { return gauge(registry, "myoperator_http_connections") == 2; }));
  RawConnection third(server.port(), "127.0.0.2");
  REQUIRE(third.connected());
  CHECK(third.closed_by_peer(std::chrono::seconds(5)));
  CHECK(rejected(registry, "client_connection_limit") == 1);
  RawConnection other(server.port(), "127.0.0.3");
  REQUIRE(other.send(get_request("/hello")));
  auto answer = other.read_response();
  REQUIRE(answer);
  CHECK(answer->status == 200);
  // A connection of the first client ends: it may open another.
  flood[0]->close();
  REQUIRE(myop::testing::eventually([&] { return gauge(registry, "myoperator_http_connections") <= 2; }));
  RawConnection again(server.port(), "127.0.0.2");
  REQUIRE(again.send(get_request("/hello")));
  auto served = again.read_response();
  REQUIRE(served);
  CHECK(served->status == 200);
  server.stop();
}

TEST_CASE("a slow handler holds one thread of the pool, not the server", "[runtime][http_server]") {
  HttpServer server("test");
  HttpServerLimits limits;
  limits.threads = 2;
  server.limits(limits);
  std::mutex mutex;
  std::condition_variable changed;
  bool release = false;
  bool entered = false;
  server.handle("/slow", [&](const HttpRequest&) {
    std::unique_lock lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
    return HttpResponse{200, "text/plain", "slow"};
  });
  server.handle("/fast", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());
  RawConnection slow(server.port());
  REQUIRE(slow.send(get_request("/slow")));
  {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return entered; }));
  }
  CHECK(http_request(server.port(), "/fast").status == 200);  // while /slow still holds its thread
  {
    std::lock_guard lock(mutex);
    release = true;
    changed.notify_all();
  }
  auto answer = slow.read_response();
  REQUIRE(answer);
  CHECK(answer->body == "slow");
  server.stop();
}

TEST_CASE("an exception out of a handler or a completion handler does not end a thread",
          "[runtime][http_server]") {
  prometheus::Registry registry;
  HttpServer server("test");
  HttpServerLimits limits;
  limits.threads = 1;  // one thread: had it ended, nothing would answer
  server.limits(limits);
  server.export_metrics(registry);
  server.handle("/throws-int", []() -> HttpResponse { throw 42; });
  server.handle("/hello", echo);
  CHECK(server.health().ok());  // not started: nothing to report
  REQUIRE(server.start("127.0.0.1:0").ok());
  CHECK(http_request(server.port(), "/throws-int").status == 500);
  server.post([] { throw std::runtime_error("a completion handler's bug"); });
  server.post([] { throw 7; });
  CHECK(http_request(server.port(), "/hello").status == 200);
  CHECK(myop::testing::eventually([&] { return gauge(registry, "myoperator_http_exceptions_total") == 3; }));
  CHECK(server.health().ok());
  CHECK(server.serving());
  server.stop();
  CHECK_FALSE(server.serving());
}

TEST_CASE("a server that stopped listening reports it: it can no longer serve", "[runtime][http_server]") {
  HttpServer server("test");
  server.handle("/hello", echo);
  REQUIRE(server.start("127.0.0.1:0").ok());
  CHECK(server.health().ok());
  // The kernel refuses the listening socket under it (as an accept error the server cannot recover from).
  const int fd = myop::runtime::testing::listening_socket(server.port());
  REQUIRE(fd >= 0);
  ::shutdown(fd, SHUT_RDWR);
  REQUIRE(myop::testing::eventually([&] { return !server.health().ok(); }));
  CHECK_THAT(server.health().error(), Catch::Contains("stopped listening"));
  CHECK_FALSE(server.serving());
  server.stop();
  CHECK(server.health().ok());  // stopped on purpose: nothing to report
}
