#include "base/token_bucket.h"

#include <catch2/catch.hpp>

#include <future>

#include "support/fake_clock.h"

using myop::base::TokenBucket;
using myop::testing::FakeClock;
using namespace std::chrono_literals;

TEST_CASE("a full bucket serves a burst at once, then one request per 1/qps", "[base][token_bucket]") {
  auto clock = std::make_shared<FakeClock>();
  const auto start = clock->now();
  TokenBucket bucket(10.0, 3, clock);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  // The fourth waits one token's worth (100 ms), the fifth two.
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 100ms);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 200ms);
}

TEST_CASE("tokens refill with time and never beyond the burst", "[base][token_bucket]") {
  auto clock = std::make_shared<FakeClock>();
  const auto start = clock->now();
  TokenBucket bucket(2.0, 2, clock);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.time_until_available(start) == 500ms);
  CHECK(bucket.reserve(start + 500ms) == 0ns);  // one token back after half a second
  CHECK(bucket.reserve(start + 500ms) > 0ns);
  // A long pause refills only up to the burst.
  const auto later = start + 1h;
  CHECK(bucket.time_until_available(later) == 0ns);
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) > 0ns);
}

TEST_CASE("a cancelled reservation gives its token back", "[base][token_bucket]") {
  auto clock = std::make_shared<FakeClock>();
  const auto start = clock->now();
  TokenBucket bucket(1.0, 1, clock);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 1s);
  bucket.cancel_reservation();
  CHECK(bucket.reserve(start) == 1s);  // not 2 s: the cancelled one no longer counts
}

TEST_CASE("qps of zero or less means no limit", "[base][token_bucket]") {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) REQUIRE(bucket.reserve(clock->now()) == 0ns);
  CHECK(bucket.acquire());
}

TEST_CASE("acquire waits for the token on the clock, gives up at the deadline or on stop",
          "[base][token_bucket]") {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(20.0, 1, clock);
  REQUIRE(bucket.acquire());
  auto second = std::async(std::launch::async, [&] { return bucket.acquire(); });
  REQUIRE(clock->await_waiters(1));
  CHECK(clock->deadlines().front() - clock->now() == 50ms);  // one token per 1/20 s
  clock->advance(50ms);
  CHECK(second.get());

  TokenBucket slow(0.5, 1, clock);
  REQUIRE(slow.acquire());
  // The next token comes in 2 s: past the deadline, so no wait at all.
  CHECK_FALSE(slow.acquire({}, clock->now() + 100ms));
  CHECK(clock->waiters() == 0);

  std::stop_source stop;
  auto stopped = std::async(std::launch::async, [&] { return slow.acquire(stop.get_token()); });
  REQUIRE(clock->await_waiters(1));
  stop.request_stop();
  CHECK_FALSE(stopped.get());
  CHECK(slow.reserve(clock->now()) == 2s);  // the stopped caller gave its token back
}
