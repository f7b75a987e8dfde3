#include "kube/backoff.h"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using myop::kube::Backoff;
using myop::kube::BackoffSettings;
using std::chrono::milliseconds;

TEST_CASE("backoff without jitter doubles from 0.8 s to 30 s", "[kube][backoff]") {
  BackoffSettings settings;
  settings.jitter = 0;
  Backoff backoff(settings, 1);
  const std::vector<long> expected = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000};
  for (long milliseconds_expected : expected)
    CHECK(backoff.next_delay() == milliseconds(milliseconds_expected));
  CHECK(backoff.failures() == 9);
  backoff.reset();
  CHECK(backoff.next_delay() == milliseconds(800));
}

TEST_CASE("jittered backoff stays within its bounds and spreads out", "[kube][backoff]") {
  Backoff backoff(BackoffSettings{}, 42);
  std::set<long> distinct_first_delays;
  for (int failure = 0; failure < 40; ++failure) {
    const auto ceiling = backoff.ceiling(failure);
    const auto delay = backoff.next_delay();
    INFO("failure " << failure);
    CHECK(delay <= ceiling);
    CHECK(delay.count() >= static_cast<long>(ceiling.count() * 0.8) - 1);
    CHECK(delay <= milliseconds(30'000));
  }
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    Backoff client(BackoffSettings{}, seed);
    distinct_first_delays.insert(client.next_delay().count());
  }
  // Fifty clients that failed together do not all come back at the same millisecond.
  CHECK(distinct_first_delays.size() > 25);
}

TEST_CASE("backoff is deterministic for a seed", "[kube][backoff]") {
  Backoff first(BackoffSettings{}, 7);
  Backoff second(BackoffSettings{}, 7);
  Backoff other(BackoffSettings{}, 8);
  bool any_difference = false;
  for (int failure = 0; failure < 12; ++failure) {
    const auto delay = first.next_delay();
    CHECK(delay == second.next_delay());
    any_difference = any_difference || delay != other.next_delay();
  }
  CHECK(any_difference);
}

TEST_CASE("backoff settings are sanitized and huge failure counts do not overflow", "[kube][backoff]") {
  BackoffSettings settings;
  settings.jitter = 5;                  // clamped to 1
  settings.multiplier = 0.5;            // clamped to 1: never shrinks
  settings.maximum = milliseconds(10);  // raised to initial
  Backoff backoff(settings, 3);
  CHECK(backoff.settings().jitter == 1.0);
  CHECK(backoff.settings().maximum == milliseconds(800));
  CHECK(backoff.ceiling(1'000'000) == milliseconds(800));
  Backoff growing(BackoffSettings{}, 3);
  CHECK(growing.ceiling(5000) == milliseconds(30'000));
}
