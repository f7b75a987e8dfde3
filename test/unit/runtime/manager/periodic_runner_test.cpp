// The periodic runner on the fake clock: time moves only by advance(), so every wait below is a wait
// for the runner to reach a state (a deadline it waits for, a step it ran), never a sleep.
#include "runtime/manager/periodic_runner.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "support/eventually.h"
#include "support/fake_clock.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;
using myop::testing::FakeClock;

namespace {

// The steps a runner ran, and what each returns (the last answer repeats).
class Steps {
 public:
  explicit Steps(std::vector<std::function<StepResult()>> answers) : answers_(std::move(answers)) {}

  StepResult operator()(const std::stop_token&) {
    std::function<StepResult()> answer;
    {
      std::lock_guard lock(mutex_);
      answer = answers_[std::min(count_, answers_.size() - 1)];
    }
    auto finish = [this] {
      std::lock_guard lock(mutex_);
      ++count_;
      changed_.notify_all();
    };
    try {
      StepResult result = answer();
      finish();
      return result;
    } catch (...) {
      finish();
      throw;
    }
  }

  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  // Until `count` steps have run; the real-time limit only turns a hang into a failure.
  bool await(std::size_t count) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return count_ >= count; });
  }

 private:
  std::vector<std::function<StepResult()>> answers_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::size_t count_ = 0;
};

PeriodicRunnerOptions options(const std::shared_ptr<FakeClock>& clock) {
  PeriodicRunnerOptions result;
  result.name = "test";
  result.first_delay = 30s;
  result.period = 5min;
  result.retry = base::constant_backoff(10s);
  result.clock = clock;
  return result;
}

// Until the runner's thread has ended (a step that was done).
bool ended(const PeriodicRunner& runner) {
  return myop::testing::eventually([&] { return !runner.running(); });
}

}  // namespace

TEST_CASE("periodic runner: the first step after first_delay, then one every period", "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto steps = std::make_shared<Steps>(std::vector<std::function<StepResult()>>{StepResult::ok});
  PeriodicRunner runner(options(clock), [steps](const std::stop_token& stop) { return (*steps)(stop); });
  const auto start = clock->now();
  runner.start();
  REQUIRE(clock->await_deadline(start + 30s));
  CHECK(steps->count() == 0);
  clock->advance(29s);
  CHECK(steps->count() == 0);
  clock->advance(1s);
  REQUIRE(steps->await(1));
  REQUIRE(clock->await_deadline(start + 30s + 5min));
  clock->advance(5min);
  REQUIRE(steps->await(2));
  REQUIRE(clock->await_deadline(start + 30s + 10min));
  CHECK(steps->count() == 2);
  CHECK(runner.running());
  runner.stop();  // ends the wait at once
  CHECK_FALSE(runner.running());
  CHECK(steps->count() == 2);
  CHECK(clock->waiters() == 0);
}

TEST_CASE("periodic runner: failed steps wait the retry backoff, which a success starts over",
          "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto steps = std::make_shared<Steps>(std::vector<std::function<StepResult()>>{
      StepResult::retry, StepResult::retry, StepResult::retry, StepResult::ok, StepResult::retry});
  auto settings = options(clock);
  settings.first_delay = 0s;
  settings.retry.initial = 1s;
  settings.retry.maximum = 3s;
  settings.retry.multiplier = 2.0;
  settings.retry.jitter = 0.0;
  PeriodicRunner runner(settings, [steps](const std::stop_token& stop) { return (*steps)(stop); });
  const auto start = clock->now();
  runner.start();
  REQUIRE(steps->await(1));  // at once
  REQUIRE(clock->await_deadline(start + 1s));
  clock->advance(1s);
  REQUIRE(steps->await(2));
  REQUIRE(clock->await_deadline(start + 3s));  // 2 s
  clock->advance(2s);
  REQUIRE(steps->await(3));
  REQUIRE(clock->await_deadline(start + 6s));  // 3 s: the maximum
  clock->advance(3s);
  REQUIRE(steps->await(4));                           // succeeds
  REQUIRE(clock->await_deadline(start + 6s + 5min));  // a period
  clock->advance(5min);
  REQUIRE(steps->await(5));
  REQUIRE(clock->await_deadline(start + 6s + 5min + 1s));  // the backoff started over
}

TEST_CASE("periodic runner: after(d) picks the next wait, done ends the thread", "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto steps = std::make_shared<Steps>(std::vector<std::function<StepResult()>>{
      [] { return StepResult::after(0s); }, [] { return StepResult::after(7s); }, StepResult::done});
  auto settings = options(clock);
  settings.first_delay = 0s;
  PeriodicRunner runner(settings, [steps](const std::stop_token& stop) { return (*steps)(stop); });
  const auto start = clock->now();
  runner.start();
  REQUIRE(steps->await(2));  // the second at once after the first
  REQUIRE(clock->await_deadline(start + 7s));
  clock->advance(7s);
  REQUIRE(steps->await(3));
  REQUIRE(ended(runner));
  CHECK(clock->waiters() == 0);
  clock->advance(1h);
  CHECK(steps->count() == 3);

  SECTION("start() runs it again") {
    runner.start();
    REQUIRE(steps->await(4));
    REQUIRE(ended(runner));
  }
}

TEST_CASE("periodic runner: stop() ends a wait and a step in flight at once", "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto settings = options(clock);
  settings.first_delay = 0s;
  std::mutex mutex;
  std::condition_variable_any changed;
  int started = 0;
  bool saw_stop = false;
  PeriodicRunner runner(settings, [&](const std::stop_token& stop) {
    std::unique_lock lock(mutex);
    ++started;
    changed.notify_all();
    if (started == 2) {
      // The second step blocks until the runner is stopped.
      changed.wait(lock, stop, [] { return false; });
      saw_stop = stop.stop_requested();
    }
    return StepResult::ok();
  });
  const auto start = clock->now();
  runner.start();
  REQUIRE(clock->await_deadline(start + 5min));
  SECTION("in a wait") {
    runner.stop();
    CHECK(started == 1);
  }
  SECTION("in a step") {
    clock->advance(5min);
    {
      std::unique_lock lock(mutex);
      REQUIRE(changed.wait_for(lock, 10s, [&] { return started == 2; }));
    }
    runner.stop();
    CHECK(saw_stop);
    CHECK(started == 2);
  }
  CHECK_FALSE(runner.running());
  clock->advance(1h);
  CHECK(clock->waiters() == 0);
}

TEST_CASE("periodic runner: a step may stop its own runner", "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto settings = options(clock);
  settings.first_delay = 0s;
  std::atomic<int> runs{0};
  std::unique_ptr<PeriodicRunner> runner;
  runner = std::make_unique<PeriodicRunner>(settings, [&](const std::stop_token&) {
    ++runs;
    runner->stop();  // asks only: joining itself would never return
    return StepResult::ok();
  });
  runner->start();
  REQUIRE(ended(*runner));
  CHECK(runs == 1);
  CHECK(clock->waiters() == 0);
  runner.reset();  // joins the ended thread
}

TEST_CASE("periodic runner: a step that throws is logged and retried, and the runner goes on",
          "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  auto steps = std::make_shared<Steps>(
      std::vector<std::function<StepResult()>>{[]() -> StepResult { throw std::runtime_error("broken"); },
                                               []() -> StepResult { throw 42; }, StepResult::ok});
  auto settings = options(clock);
  settings.first_delay = 0s;
  PeriodicRunner runner(settings, [steps](const std::stop_token& stop) { return (*steps)(stop); });
  const auto start = clock->now();
  runner.start();
  REQUIRE(steps->await(1));
  REQUIRE(clock->await_deadline(start + 10s));  // the retry delay, not the period
  clock->advance(10s);
  REQUIRE(steps->await(2));
  REQUIRE(clock->await_deadline(start + 20s));
  clock->advance(10s);
  REQUIRE(steps->await(3));
  REQUIRE(clock->await_deadline(start + 20s + 5min));
  CHECK(runner.running());
}

TEST_CASE("periodic runner: trigger() runs the step now, and is not lost while a step runs",
          "[runtime][periodic]") {
  auto clock = std::make_shared<FakeClock>();
  std::shared_ptr<PeriodicRunner> runner;
  auto steps = std::make_shared<Steps>(
      std::vector<std::function<StepResult()>>{StepResult::ok,
                                               [&runner] {
                                                 runner->trigger();  // while the second step runs
                                                 return StepResult::ok();
                                               },
                                               StepResult::ok});
  auto settings = options(clock);
  runner = std::make_shared<PeriodicRunner>(settings,
                                            [steps](const std::stop_token& stop) { return (*steps)(stop); });
  const auto start = clock->now();
  runner->start();
  REQUIRE(clock->await_deadline(start + 30s));
  runner->trigger();  // before first_delay
  REQUIRE(steps->await(1));
  REQUIRE(clock->await_deadline(start + 5min));
  runner->trigger();
  REQUIRE(steps->await(3));  // the second, and the third at once after it
  REQUIRE(clock->await_deadline(start + 5min));
  CHECK(steps->count() == 3);
  runner->stop();
}

TEST_CASE("periodic runner: the Runnable the manager sees", "[runtime][periodic]") {
  auto settings = options(std::make_shared<FakeClock>());
  settings.needs_leader_election = true;
  PeriodicRunner runner(settings, [](const std::stop_token&) { return StepResult::ok(); });
  CHECK(runner.name() == "test");
  CHECK(runner.needs_leader_election());
  CHECK(runner.has_synced());
  bool synced = false;
  runner.on_synced([&] { synced = true; });
  CHECK(synced);
}
