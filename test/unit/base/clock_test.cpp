// The clock's timers, real and fake. Every component that waits relies on them: a wait ends when
// its predicate holds, its stop token is requested, or its deadline passes on that clock.
#include "base/clock.h"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "support/fake_clock.h"

using namespace std::chrono_literals;
using myop::base::Clock;
using myop::base::TimePoint;
using myop::testing::FakeClock;

namespace {

// A thread waiting on `clock` with its own condition and mutex, as a component would.
struct Waiter {
  std::mutex mutex;
  std::condition_variable_any condition;
  bool ready = false;

  std::future<bool> start(const Clock& clock, TimePoint deadline, std::stop_token stop = {}) {
    return std::async(std::launch::async, [this, &clock, deadline, stop] {
      std::unique_lock lock(mutex);
      return clock.wait_until(condition, lock, stop, deadline, [this] { return ready; });
    });
  }
  void make_ready() {
    std::lock_guard lock(mutex);
    ready = true;
    condition.notify_all();
  }
};

}  // namespace

TEST_CASE("a fake-clock waiter wakes when advance reaches its deadline, and not before", "[base][clock]") {
  FakeClock clock;
  const TimePoint deadline = clock.now() + 10s;
  Waiter waiter;
  auto woke = waiter.start(clock, deadline);
  REQUIRE(clock.await_deadline(deadline));
  clock.advance(9s);
  // advance() notifies only the waiters it makes due, synchronously: this one is still registered.
  CHECK(clock.deadlines() == std::vector<TimePoint>{deadline});
  CHECK(woke.wait_for(0s) == std::future_status::timeout);
  clock.advance(1s);
  CHECK_FALSE(woke.get());  // the deadline, not the predicate, ended the wait
  CHECK(clock.waiters() == 0);
}

TEST_CASE("a fake-clock advance wakes exactly the waiters it makes due", "[base][clock]") {
  FakeClock clock;
  const TimePoint start = clock.now();
  Waiter first, second, third;
  auto first_woke = first.start(clock, start + 1s);
  auto second_woke = second.start(clock, start + 2s);
  auto third_woke = third.start(clock, start + 3s);
  REQUIRE(clock.await_waiters(3));
  clock.advance(2s);
  first_woke.get();
  second_woke.get();
  CHECK(clock.deadlines() == std::vector<TimePoint>{start + 3s});
  clock.advance(1s);
  third_woke.get();
  CHECK(clock.waiters() == 0);
}

TEST_CASE("a fake-clock wait ends when its stop token is requested", "[base][clock]") {
  FakeClock clock;
  std::stop_source stop;
  Waiter waiter;
  auto woke = waiter.start(clock, TimePoint::max(), stop.get_token());
  REQUIRE(clock.await_waiters(1));
  stop.request_stop();
  CHECK_FALSE(woke.get());
  CHECK(clock.waiters() == 0);

  std::stop_source sleeping;
  auto slept = std::async(std::launch::async, [&] { return clock.sleep_for(sleeping.get_token(), 1h); });
  REQUIRE(clock.await_waiters(1));
  sleeping.request_stop();
  CHECK_FALSE(slept.get());
}

TEST_CASE("a fake-clock wait ends when its predicate holds", "[base][clock]") {
  FakeClock clock;
  Waiter waiter;
  auto woke = waiter.start(clock, clock.now() + 1h);
  REQUIRE(clock.await_waiters(1));
  waiter.make_ready();
  CHECK(woke.get());
  CHECK(clock.waiters() == 0);
}

TEST_CASE("fake-clock sleeps and the wall clock move with advance", "[base][clock]") {
  FakeClock clock;
  const auto wall_start = clock.wall_now();
  auto slept = std::async(std::launch::async, [&] { return clock.sleep_for({}, 5s); });
  REQUIRE(clock.await_deadline(clock.now() + 5s));
  clock.advance(5s);
  CHECK(slept.get());
  CHECK(clock.wall_now() - wall_start == 5s);
}

TEST_CASE("with auto-advance a fake-clock wait jumps to its deadline", "[base][clock]") {
  FakeClock clock;
  clock.set_auto_advance(true);
  const TimePoint start = clock.now();
  CHECK(clock.sleep_for({}, 30s));
  CHECK(clock.now() - start == 30s);
}

TEST_CASE("the system clock's wait ends on its predicate, its stop token or its deadline", "[base][clock]") {
  const Clock& clock = *myop::base::system_clock();
  SECTION("predicate") {
    Waiter waiter;
    auto woke = waiter.start(clock, TimePoint::max());
    waiter.make_ready();
    CHECK(woke.get());
  }
  SECTION("stop token, with no deadline") {
    std::stop_source stop;
    Waiter waiter;
    auto woke = waiter.start(clock, TimePoint::max(), stop.get_token());
    stop.request_stop();
    CHECK_FALSE(woke.get());
  }
  SECTION("deadline") {
    const TimePoint deadline = clock.now() + 20ms;
    CHECK(clock.sleep_until({}, deadline));
    CHECK(clock.now() >= deadline);
  }
  SECTION("a deadline too far to add does not overflow") {
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_for(stop.get_token(), myop::base::Duration::max()));
  }
}
