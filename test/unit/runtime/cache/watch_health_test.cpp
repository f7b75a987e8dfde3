#include <catch2/catch.hpp>

#include "runtime/cache/watch_health.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;

namespace {

const kube::Error kConversionFailed = kube::make_error(
    kube::Reason::InternalError,
    "conversion webhook for myorg.io/v1beta1, Kind=MyResource failed: Post \"https://127.0.0.1:1/convert\": "
    "dial tcp 127.0.0.1:1: connect: connection refused",
    500);
const kube::Error kGone = kube::make_error(kube::Reason::Gone, "too old resource version: 1 (2)", 410);
const kube::Error kReset = kube::make_error(kube::Reason::Transport, "connection reset by peer");

}  // namespace

TEST_CASE("watch health: failing from the second failure in a row until the next progress",
          "[runtime][informer]") {
  WatchHealth health;
  const TimePoint start{};
  CHECK_FALSE(health.failing());
  CHECK(health.health(start).ok());

  CHECK_FALSE(health.failed(kReset, start));
  CHECK_FALSE(health.failing());
  CHECK(health.failures() == 1);

  CHECK(health.failed(kConversionFailed, start + 2s));
  CHECK(health.failing());
  CHECK_FALSE(health.failed(kConversionFailed, start + 5s));  // failing already: no second transition
  const auto failing = health.health(start + 12s);
  REQUIRE_FALSE(failing.ok());
  CHECK_THAT(failing.error(), Catch::StartsWith("3 attempts in a row failed over 12 s; the last: "));
  CHECK_THAT(failing.error(),
             Catch::Contains("conversion webhook for myorg.io/v1beta1, Kind=MyResource failed"));
  CHECK_THAT(failing.error(), Catch::Contains("HTTP 500"));

  CHECK(health.progressed());
  CHECK_FALSE(health.failing());
  CHECK(health.failures() == 0);
  CHECK(health.health(start + 13s).ok());
  CHECK_FALSE(health.progressed());  // healthy already: no transition
}

TEST_CASE("watch health: a watch that breaks and comes back, again and again, never fails",
          "[runtime][informer]") {
  WatchHealth health;
  for (int round = 0; round < 10; ++round) {
    CHECK_FALSE(health.failed(kReset, TimePoint{} + std::chrono::minutes(round)));
    CHECK_FALSE(health.progressed());
  }
  CHECK_FALSE(health.failing());
}

TEST_CASE("watch health: 410 Gone and a relist that works are routine, relists that keep failing are not",
          "[runtime][informer]") {
  WatchHealth health;
  // Gone, then a relist that succeeds; twice.
  for (int round = 0; round < 2; ++round) {
    CHECK_FALSE(health.failed(kGone, TimePoint{}));
    CHECK(health.failures() == 0);
    CHECK_FALSE(health.progressed());
  }
  CHECK_FALSE(health.failing());

  // Gone, then relists that fail: failing at the second, with the relist's error, not Gone's.
  CHECK_FALSE(health.failed(kGone, TimePoint{}));
  CHECK_FALSE(health.failed(kConversionFailed, TimePoint{} + 1s));
  CHECK(health.failed(kConversionFailed, TimePoint{} + 3s));
  CHECK(health.last_error() == kConversionFailed.to_string());
  CHECK(health.first_failure() == TimePoint{} + 1s);
  // A Gone while failing changes nothing: still failing, same last error.
  CHECK_FALSE(health.failed(kGone, TimePoint{} + 4s));
  CHECK(health.failing());
  CHECK(health.last_error() == kConversionFailed.to_string());
}
