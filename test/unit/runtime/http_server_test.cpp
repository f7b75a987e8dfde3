#include <catch2/catch.hpp>

#include "http_get.h"
#include "runtime/http_server.h"

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

TEST_CASE("a port in use is an error value, not a crash", "[runtime][http_server]") {
  HttpServer first("first");
  REQUIRE_FALSE(first.start("127.0.0.1:0"));
  HttpServer second("second");
  auto error = second.start("127.0.0.1:" + std::to_string(first.port()));
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("cannot listen"));
  CHECK(second.start("nonsense"));
}
