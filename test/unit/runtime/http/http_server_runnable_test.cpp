#include "runtime/http/http_server_runnable.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>

using namespace myop::runtime;

TEST_CASE("an HTTP server runnable is synced once it listens and stops the server",
          "[runtime][http_server_runnable]") {
  HttpServer server("probes");
  bool prepared = false;
  HttpServerRunnable runnable(server, "127.0.0.1:0", [&]() -> myop::base::Result<void, std::string> {
    prepared = true;
    return {};
  });
  CHECK(runnable.name() == "server-probes");
  bool synced = false;
  runnable.on_synced([&] { synced = true; });
  std::optional<std::string> failure;
  runnable.on_failed([&](std::string error) { failure = std::move(error); });
  CHECK_FALSE(runnable.has_synced());
  runnable.start();
  CHECK(prepared);
  CHECK(synced);
  CHECK(runnable.has_synced());
  CHECK_FALSE(failure.has_value());
  CHECK(server.serving());
  runnable.stop();
  CHECK_FALSE(server.serving());
}

TEST_CASE("an HTTP server runnable fails with the reason when it cannot bind or be prepared",
          "[runtime][http_server_runnable]") {
  HttpServer squatter("squatter");
  REQUIRE(squatter.start("127.0.0.1:0").ok());
  HttpServer server("metrics");
  SECTION("the address is taken") {
    HttpServerRunnable runnable(server, "127.0.0.1:" + std::to_string(squatter.port()));
    std::optional<std::string> failure;
    runnable.on_failed([&](std::string error) { failure = std::move(error); });
    runnable.start();
    REQUIRE(failure.has_value());
    CHECK_FALSE(failure->empty());
    CHECK_FALSE(runnable.has_synced());
  }
  SECTION("the preparation fails: nothing binds") {
    HttpServerRunnable runnable(server, "127.0.0.1:0", []() -> myop::base::Result<void, std::string> {
      return myop::base::fail("no certificate");
    });
    std::optional<std::string> failure;
    runnable.on_failed([&](std::string error) { failure = std::move(error); });
    runnable.start();
    CHECK(failure == std::optional<std::string>("no certificate"));
    CHECK_FALSE(server.serving());
    CHECK_FALSE(runnable.has_synced());
  }
}
