// The connection pool of unary requests, against the real API server of the test control plane: kept
// connections are reused, a deadline and a stop token end a request the server has not finished, a
// connection the server closes is not reused, and a certificate that does not name the server fails.
#include "kube/connection_pool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <thread>
#include <variant>
#include <vector>

#include "kube/config.h"
#include "kube/kube_test_support.h"

namespace myop::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::admin_config;

// The admin's TLS material, loaded as the transport loads it.
std::shared_ptr<boost::asio::ssl::context> admin_tls(const ClientConfig& config) {
  auto context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
  context->add_certificate_authority(boost::asio::buffer(config.ca_pem));
  context->set_verify_mode(boost::asio::ssl::verify_peer);
  context->use_certificate_chain(boost::asio::buffer(config.client_certificate_pem));
  context->use_private_key(boost::asio::buffer(config.client_key_pem), boost::asio::ssl::context::pem);
  return context;
}

PoolEndpoint endpoint_of(const ClientConfig& config, const std::string& tls_name = "") {
  // The test control plane's server is https://127.0.0.1:<port>.
  const std::string authority = config.server.substr(std::string("https://").size());
  PoolEndpoint endpoint;
  endpoint.host = authority.substr(0, authority.rfind(':'));
  endpoint.port = authority.substr(authority.rfind(':') + 1);
  endpoint.host_header = authority;
  endpoint.tls_name = tls_name.empty() ? endpoint.host : tls_name;
  return endpoint;
}

const std::vector<std::pair<std::string, std::string>> kAccept{{"Accept", "application/json"}};

PoolRequest get(std::string_view target,
                const std::vector<std::pair<std::string, std::string>>* headers = &kAccept) {
  return PoolRequest{"GET", target, headers, {}, {}};
}

}  // namespace

TEST_CASE("pool: sequential requests reuse one kept-alive connection", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  for (int i = 0; i < 20; ++i) {
    auto outcome = pool.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
    REQUIRE(std::holds_alternative<PoolAnswer>(outcome));
    const auto& answer = std::get<PoolAnswer>(outcome);
    CHECK(answer.status == 200);
    CHECK(answer.content_type.find("application/json") != std::string::npos);
    CHECK(answer.body.find(R"("name":"default")") != std::string::npos);
  }
  CHECK(pool.connections_opened() == 1);
}

TEST_CASE("pool: a body is sent and a non-2xx answer is returned as an answer", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  const std::string body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
  auto review = pool.send(PoolRequest{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", &kAccept,
                                      body, "application/json"},
                          {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(review));
  CHECK(std::get<PoolAnswer>(review).status == 201);
  CHECK(std::get<PoolAnswer>(review).body.find(R"("userInfo":{"username":)") != std::string::npos);

  auto missing = pool.send(get("/api/v1/namespaces/myop-no-such-namespace"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(missing));
  CHECK(std::get<PoolAnswer>(missing).status == 404);
  CHECK(std::get<PoolAnswer>(missing).body.find(R"("reason":"NotFound")") != std::string::npos);
  CHECK(pool.connections_opened() == 1);  // a 404 keeps the connection
}

TEST_CASE("pool: concurrent requests use one connection each, and keep them", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool, &ok] {
      for (int i = 0; i < 25; ++i) {
        auto outcome = pool.send(get("/api/v1/namespaces"), {}, Clock::now() + 10s);
        if (std::holds_alternative<PoolAnswer>(outcome) && std::get<PoolAnswer>(outcome).status == 200) ++ok;
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(ok == 100);
  CHECK(pool.connections_opened() >= 1);
  CHECK(pool.connections_opened() <= 4);
}

TEST_CASE("pool: the deadline ends a request the server does not finish", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  // A watch is an answer that does not end: the server keeps the body open for timeoutSeconds.
  const auto started = Clock::now();
  auto outcome = pool.send(get("/api/v1/namespaces?watch=1&timeoutSeconds=60"), {}, started + 500ms);
  const auto took = Clock::now() - started;
  REQUIRE(std::holds_alternative<PoolFailure>(outcome));
  const auto& failure = std::get<PoolFailure>(outcome);
  CHECK(failure.timed_out);
  CHECK_FALSE(failure.cancelled);
  CHECK(failure.stage == PoolFailure::Stage::Read);
  CHECK(took >= 500ms);
  CHECK(took < 10s);

  // The timed-out connection is not reused: the next request opens a new one and succeeds.
  auto next = pool.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(next));
  CHECK(std::get<PoolAnswer>(next).status == 200);
  CHECK(pool.connections_opened() == 2);
}

TEST_CASE("pool: a stop token ends a request in flight", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  const auto started = Clock::now();
  auto outcome =
      pool.send(get("/api/v1/namespaces?watch=1&timeoutSeconds=60"), stop.get_token(), started + 60s);
  const auto took = Clock::now() - started;
  stopper.join();
  REQUIRE(std::holds_alternative<PoolFailure>(outcome));
  CHECK(std::get<PoolFailure>(outcome).cancelled);
  CHECK_FALSE(std::get<PoolFailure>(outcome).timed_out);
  CHECK(took < 10s);

  // A stop that came after its request finished does not touch the connection's next request.
  std::stop_source late;
  auto first = pool.send(get("/api/v1/namespaces/default"), late.get_token(), Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(first));
  late.request_stop();
  auto second = pool.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(second));
  CHECK(std::get<PoolAnswer>(second).status == 200);
}

TEST_CASE("pool: an answer longer than the request's limit fails and its connection is dropped",
          "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  // A Namespace is a few hundred bytes (sent with a Content-Length); the list of all namespaces is
  // longer than 1 KiB (sent chunked, as the API server does for any answer it did not buffer whole).
  for (const auto& [target, limit] :
       {std::pair<std::string_view, std::uint64_t>{"/api/v1/namespaces/default", 64},
        {"/api/v1/namespaces", 1024}}) {
    INFO(target);
    PoolRequest request = get(target);
    request.maximum_body_bytes = limit;
    auto outcome = pool.send(request, {}, Clock::now() + 10s);
    REQUIRE(std::holds_alternative<PoolFailure>(outcome));
    const auto& failure = std::get<PoolFailure>(outcome);
    CHECK(failure.body_too_large);
    CHECK(failure.stage == PoolFailure::Stage::Read);
    CHECK_FALSE(failure.timed_out);
  }
  CHECK(pool.idle_connections() == 0);
  auto room = pool.send(get("/api/v1/namespaces"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(room));
  CHECK(std::get<PoolAnswer>(room).status == 200);
  CHECK(pool.connections_opened() == 3);
}

TEST_CASE("pool: a connection the server closes is not reused", "[integration][kube][pool]") {
  const auto config = admin_config();
  ConnectionPool pool(endpoint_of(config), admin_tls(config));
  // "Connection: close" asks the server to close after its answer.
  const std::vector<std::pair<std::string, std::string>> closing{{"Accept", "application/json"},
                                                                 {"Connection", "close"}};
  for (int i = 0; i < 3; ++i) {
    auto outcome = pool.send(get("/api/v1/namespaces/default", &closing), {}, Clock::now() + 10s);
    REQUIRE(std::holds_alternative<PoolAnswer>(outcome));
    CHECK(std::get<PoolAnswer>(outcome).status == 200);
  }
  CHECK(pool.connections_opened() == 3);

  // A kept connection idle for longer than max_idle_time is dropped before use.
  PoolOptions short_idle;
  short_idle.max_idle_time = 0s;
  ConnectionPool strict(endpoint_of(config), admin_tls(config), short_idle);
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(1100ms);
    REQUIRE(std::holds_alternative<PoolAnswer>(
        strict.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s)));
  }
  CHECK(strict.connections_opened() == 2);
}

TEST_CASE("pool: connections left idle past max_idle_time under a used one are closed",
          "[integration][kube][pool]") {
  const auto config = admin_config();
  PoolOptions options;
  options.max_idle_time = 1s;
  ConnectionPool pool(endpoint_of(config), admin_tls(config), options);
  // A burst of concurrent requests leaves several connections idle (they overlap on almost every try).
  for (int burst = 0; burst < 20 && pool.idle_connections() < 2; ++burst) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&pool] { pool.send(get("/api/v1/namespaces"), {}, Clock::now() + 10s); });
    for (auto& thread : threads) thread.join();
  }
  REQUIRE(pool.idle_connections() >= 2);
  // Only the most recently used one is used again; the others age below it.
  std::this_thread::sleep_for(600ms);
  REQUIRE(std::holds_alternative<PoolAnswer>(pool.send(get("/api/v1/namespaces"), {}, Clock::now() + 10s)));
  std::this_thread::sleep_for(600ms);
  REQUIRE(std::holds_alternative<PoolAnswer>(pool.send(get("/api/v1/namespaces"), {}, Clock::now() + 10s)));
  CHECK(pool.idle_connections() == 1);
}

TEST_CASE("pool: the certificate must name the server", "[integration][kube][pool][tls]") {
  const auto config = admin_config();
  ConnectionPool wrong(endpoint_of(config, "wrong.example.com"), admin_tls(config));
  auto outcome = wrong.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolFailure>(outcome));
  CHECK(std::get<PoolFailure>(outcome).stage == PoolFailure::Stage::Handshake);

  ConnectionPool named(endpoint_of(config, "kubernetes.default.svc"), admin_tls(config));
  auto good = named.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(good));
  CHECK(std::get<PoolAnswer>(good).status == 200);
}

TEST_CASE("pool: a host name is resolved before connecting", "[integration][kube][pool]") {
  const auto config = admin_config();
  PoolEndpoint named = endpoint_of(config);
  const std::string address = named.host;
  named.host = "localhost";  // from /etc/hosts: the resolver path, which an IP address skips
  named.tls_name = address;  // the certificate names the address
  ConnectionPool pool(named, admin_tls(config));
  auto outcome = pool.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolAnswer>(outcome));
  CHECK(std::get<PoolAnswer>(outcome).status == 200);
}

TEST_CASE("pool: nothing listening is a connect failure before the deadline", "[integration][kube][pool]") {
  const auto config = admin_config();
  PoolEndpoint closed_port = endpoint_of(config);
  closed_port.port = "1";  // nothing listens on port 1 of loopback
  ConnectionPool pool(closed_port, admin_tls(config));
  auto outcome = pool.send(get("/api/v1/namespaces/default"), {}, Clock::now() + 10s);
  REQUIRE(std::holds_alternative<PoolFailure>(outcome));
  CHECK(std::get<PoolFailure>(outcome).stage == PoolFailure::Stage::Connect);
  CHECK_FALSE(std::get<PoolFailure>(outcome).timed_out);
}

}  // namespace myop::kube
