#include <catch2/catch.hpp>

#include "runtime/token_bucket.h"

using namespace std::chrono_literals;
using myop::runtime::TimePoint;
using myop::runtime::TokenBucket;

TEST_CASE("token bucket allows a burst, then the refill rate", "[runtime][token_bucket]") {
  TimePoint now{};
  TokenBucket bucket(10, 3, now);
  CHECK(bucket.try_acquire(now));
  CHECK(bucket.try_acquire(now));
  CHECK(bucket.try_acquire(now));
  CHECK_FALSE(bucket.try_acquire(now));
  CHECK(bucket.next_available(now) > now);
  CHECK(bucket.next_available(now) <= now + 101ms);
  now += 50ms;
  CHECK_FALSE(bucket.try_acquire(now));
  now += 50ms;
  CHECK(bucket.try_acquire(now));
  CHECK_FALSE(bucket.try_acquire(now));
  // A long idle period refills to the burst, not beyond.
  now += 1h;
  for (int i = 0; i < 3; ++i) CHECK(bucket.try_acquire(now));
  CHECK_FALSE(bucket.try_acquire(now));
}
