#include "kube/token_bucket.h"

#include <catch2/catch.hpp>

#include <thread>

using myop::kube::TokenBucket;
using namespace std::chrono_literals;

TEST_CASE("a full bucket serves a burst at once, then one request per 1/qps", "[kube][token_bucket]") {
  const auto start = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket bucket(10.0, 3, start);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  // The fourth waits one token's worth (100 ms), the fifth two.
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 100ms);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 200ms);
}

TEST_CASE("tokens refill with time and never beyond the burst", "[kube][token_bucket]") {
  const auto start = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket bucket(2.0, 2, start);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start + 500ms) == 0ns);  // one token back after half a second
  CHECK(bucket.reserve(start + 500ms) > 0ns);
  // A long pause refills only up to the burst.
  const auto later = start + 1h;
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) > 0ns);
}

TEST_CASE("a cancelled reservation gives its token back", "[kube][token_bucket]") {
  const auto start = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket bucket(1.0, 1, start);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 1s);
  bucket.cancel_reservation();
  CHECK(bucket.reserve(start) == 1s);  // not 2 s: the cancelled one no longer counts
}

TEST_CASE("qps of zero or less means no limit", "[kube][token_bucket]") {
  TokenBucket bucket(0, 1);
  for (int i = 0; i < 1000; ++i) REQUIRE(bucket.reserve(TokenBucket::Clock::now()) == 0ns);
}

TEST_CASE("acquire waits for the token, gives up at the deadline or on stop", "[kube][token_bucket]") {
  TokenBucket bucket(20.0, 1);
  REQUIRE(bucket.acquire());
  const auto before = TokenBucket::Clock::now();
  REQUIRE(bucket.acquire());
  CHECK(TokenBucket::Clock::now() - before >= 40ms);  // ~50 ms per token

  TokenBucket slow(0.5, 1);
  REQUIRE(slow.acquire());
  CHECK_FALSE(slow.acquire({}, TokenBucket::Clock::now() + 100ms));  // next token in 2 s

  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  const auto waiting = TokenBucket::Clock::now();
  CHECK_FALSE(slow.acquire(stop.get_token()));
  CHECK(TokenBucket::Clock::now() - waiting < 1s);
  stopper.join();
}
