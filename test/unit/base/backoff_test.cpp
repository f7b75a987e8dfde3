#include "base/backoff.h"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using myop::base::Backoff;
using myop::base::BackoffSchedule;
using myop::base::BackoffSettings;
using myop::base::JitterDirection;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

// The work queue's per-key schedule: 5 ms doubling to 1000 s, no jitter.
BackoffSchedule work_queue_schedule() {
  return BackoffSchedule({5ms, 1000s, 2.0, 0.0, JitterDirection::down});
}

}  // namespace

TEST_CASE("backoff without jitter doubles from 0.8 s to 30 s", "[base][backoff]") {
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

TEST_CASE("jittered backoff stays within its bounds and spreads out", "[base][backoff]") {
  Backoff backoff(BackoffSettings{}, 42);
  std::set<long long> distinct_first_delays;
  for (int failure = 0; failure < 40; ++failure) {
    const auto ceiling = backoff.ceiling(failure);
    const auto delay = backoff.next_delay();
    INFO("failure " << failure);
    CHECK(delay <= ceiling);
    CHECK(delay.count() >= static_cast<long long>(static_cast<double>(ceiling.count()) * 0.8) - 1);
    CHECK(delay <= milliseconds(30'000));
  }
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    Backoff client(BackoffSettings{}, seed);
    distinct_first_delays.insert(std::chrono::duration_cast<milliseconds>(client.next_delay()).count());
  }
  // Fifty clients that failed together do not all come back at the same millisecond.
  CHECK(distinct_first_delays.size() > 25);
}

TEST_CASE("backoff is deterministic for a seed", "[base][backoff]") {
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

TEST_CASE("backoff settings are sanitized and huge failure counts do not overflow", "[base][backoff]") {
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
  const BackoffSchedule unbounded({1s, myop::base::Duration::max(), 2.0, 1.0, JitterDirection::up});
  CHECK(unbounded.ceiling(1'000'000) == myop::base::Duration::max());
  CHECK(unbounded.delay(1'000'000, 0.99) == myop::base::Duration::max());
}

TEST_CASE("the work queue's schedule doubles from 5 ms and caps at 1000 s", "[base][backoff]") {
  const BackoffSchedule schedule = work_queue_schedule();
  // A key's n-th consecutive failure waits ceiling(n - 1).
  CHECK(schedule.ceiling(0) == 5ms);
  CHECK(schedule.ceiling(1) == 10ms);
  CHECK(schedule.ceiling(2) == 20ms);
  CHECK(schedule.ceiling(9) == 2560ms);
  CHECK(schedule.ceiling(17) == 655360ms);
  CHECK(schedule.ceiling(18) == 1000s);
  CHECK(schedule.ceiling(999'999) == 1000s);
  CHECK(schedule.delay(3, 0.9) == 40ms);  // no jitter: the draw does not matter
}

TEST_CASE("upward jitter lengthens the wait by at most its fraction", "[base][backoff]") {
  const BackoffSchedule schedule({200ms, 10s, 2.0, 0.2, JitterDirection::up});
  CHECK(schedule.delay(0, 0.0) == 200ms);
  CHECK(schedule.delay(0, 0.5) == 220ms);
  CHECK(schedule.jittered(10s, 0.999) > 11900ms);
  CHECK(schedule.jittered(10s, 0.999) <= 12000ms);
  CHECK(schedule.jittered(10s, 7.0) == 12s);  // a draw outside [0, 1) is clamped
}

TEST_CASE("an injected random source drives the draws", "[base][backoff]") {
  std::vector<double> draws = {0.0, 0.5, 0.999};
  std::size_t next = 0;
  Backoff backoff(BackoffSettings{1s, 8s, 2.0, 0.5, JitterDirection::down}, [&] { return draws[next++]; });
  CHECK(backoff.next_delay() == 1s);
  CHECK(backoff.next_delay() == 1500ms);
  CHECK(backoff.next_delay() == 2002ms);  // 4 s * (1 - 0.5 * 0.999)
  CHECK(next == 3);
}
