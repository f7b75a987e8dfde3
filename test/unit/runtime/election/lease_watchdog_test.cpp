// The renew-deadline watchdog on the fake clock: it fires once, at the deadline of the last renewal,
// from its own thread, and not at all when renewed in time or stopped.
#include "runtime/election/lease_watchdog.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "support/fake_clock.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;
using myop::testing::FakeClock;

namespace {

struct Expiries {
  std::mutex mutex;
  std::condition_variable changed;
  int count = 0;

  void fire() {
    std::lock_guard lock(mutex);
    ++count;
    changed.notify_all();
  }
  int seen() {
    std::lock_guard lock(mutex);
    return count;
  }
  // Until it has fired; the real-time limit only turns a hang into a failure.
  bool await_fired() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return count > 0; });
  }
};

}  // namespace

TEST_CASE("lease watchdog: fires once at the deadline of the last renewal", "[runtime][lease_watchdog]") {
  auto clock = std::make_shared<FakeClock>();
  Expiries expiries;
  LeaseWatchdog watchdog("test", 9s, clock, [&] { expiries.fire(); });
  const auto start = clock->now();
  watchdog.renewed(start);
  watchdog.start();
  REQUIRE(clock->await_deadline(start + 9s));
  clock->advance(8s);
  CHECK_FALSE(watchdog.overdue(clock->now()));
  watchdog.renewed(clock->now());  // moves the deadline to start + 17 s
  watchdog.renewed(start);         // never back
  CHECK(watchdog.deadline() == start + 17s);
  clock->advance(1s);  // the old deadline: it wakes, and waits for the new one
  REQUIRE(clock->await_deadline(start + 17s));
  CHECK(expiries.seen() == 0);
  CHECK_FALSE(watchdog.expired());
  clock->advance(7s);
  CHECK(expiries.seen() == 0);
  clock->advance(1s);
  REQUIRE(expiries.await_fired());
  CHECK(watchdog.overdue(clock->now()));
  CHECK(watchdog.expired());
  clock->advance(1h);  // once: its thread has ended
  watchdog.stop();
  CHECK(expiries.seen() == 1);
  CHECK(clock->waiters() == 0);
}

TEST_CASE(
    "lease watchdog: overdue at start it fires without waiting, stopped before the deadline it fires "
    "nothing",
    "[runtime][lease_watchdog]") {
  auto clock = std::make_shared<FakeClock>();
  Expiries expiries;
  LeaseWatchdog watchdog("test", 10s, clock, [&] { expiries.fire(); });
  const auto start = clock->now();
  SECTION("overdue when started") {
    watchdog.renewed(start - 10s);
    watchdog.start();
    REQUIRE(expiries.await_fired());
    CHECK(clock->now() == start);
  }
  SECTION("stopped in time") {
    watchdog.renewed(start);
    watchdog.start();
    REQUIRE(clock->await_deadline(start + 10s));
    watchdog.stop();
    clock->advance(1h);
    CHECK(expiries.seen() == 0);
    CHECK_FALSE(watchdog.expired());
  }
}

TEST_CASE("lease watchdog: the callback may stop the watchdog, and a new start arms it again",
          "[runtime][lease_watchdog]") {
  auto clock = std::make_shared<FakeClock>();
  Expiries expiries;
  std::unique_ptr<LeaseWatchdog> watchdog;
  watchdog = std::make_unique<LeaseWatchdog>("test", 5s, clock, [&] {
    watchdog->stop();  // from its own thread: asks, does not join itself
    expiries.fire();
  });
  const auto start = clock->now();
  watchdog->renewed(start);
  watchdog->start();
  REQUIRE(clock->await_deadline(start + 5s));
  clock->advance(5s);
  REQUIRE(expiries.await_fired());
  watchdog->stop();
  watchdog->renewed(clock->now());
  watchdog->start();
  CHECK_FALSE(watchdog->expired());
  REQUIRE(clock->await_deadline(start + 10s));
  clock->advance(5s);
  {
    std::unique_lock lock(expiries.mutex);
    REQUIRE(expiries.changed.wait_for(lock, 10s, [&] { return expiries.count == 2; }));
  }
  watchdog.reset();
}
