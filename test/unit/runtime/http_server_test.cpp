#include <catch2/catch.hpp>

#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "http_get.h"
#include "https_get.h"
#include "runtime/http_server.h"
#include "runtime/tls_certificate.h"

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
  REQUIRE_FALSE(server.start("127.0.0.1:0"));
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
  server.max_request_body(1024);
  HttpRequest seen;
  server.handle_post("/convert", [&](const HttpRequest& request) {
    seen = request;
    return HttpResponse{200, "application/json", R"({"echo":)" + request.body + "}"};
  });
  server.handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok"}; });
  REQUIRE_FALSE(server.start("127.0.0.1:0"));

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
    REQUIRE_FALSE(server->start("127.0.0.1:0"));
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
  REQUIRE_FALSE(first.start("127.0.0.1:0"));
  HttpServer second("second");
  auto error = second.start("127.0.0.1:" + std::to_string(first.port()));
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("cannot listen"));
  CHECK(second.start("nonsense"));
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
  REQUIRE_FALSE(server.start("127.0.0.1:0"));

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
