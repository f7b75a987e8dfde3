#include <catch2/catch.hpp>

#include "runtime/backoff.h"

using namespace std::chrono_literals;
using myop::runtime::ExponentialBackoff;

TEST_CASE("backoff doubles from 5 ms and caps at 1000 s", "[runtime][backoff]") {
  ExponentialBackoff backoff;
  CHECK(backoff.delay(1) == 5ms);
  CHECK(backoff.delay(2) == 10ms);
  CHECK(backoff.delay(3) == 20ms);
  CHECK(backoff.delay(10) == 2560ms);
  CHECK(backoff.delay(18) == 655360ms);
  CHECK(backoff.delay(19) == 1000s);
  CHECK(backoff.delay(1000000) == 1000s);
}
