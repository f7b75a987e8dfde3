#include "runtime/manager/runnable_group.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/eventually.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::testing::eventually;

namespace {

// What the runnables and the elector did, in order: "start:a", "stop:a", "release".
class Journal {
 public:
  void add(std::string entry) {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  bool has(const std::string& entry) const {
    std::lock_guard lock(mutex_);
    return std::find(entries_.begin(), entries_.end(), entry) != entries_.end();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> entries_;
};

class FakeRunnable final : public Runnable {
 public:
  FakeRunnable(std::string name, Journal& journal) : name_(std::move(name)), journal_(journal) {}

  std::string name() const override { return name_; }
  void start() override {
    journal_.add("start:" + name_);
    if (!start_error.empty()) report_failure(start_error);
  }
  void stop() override {
    journal_.add("stop:" + name_);
    if (on_stop) on_stop();
  }
  bool has_synced() const override {
    std::lock_guard lock(mutex_);
    return synced_;
  }
  void on_synced(std::function<void()> callback) override {
    std::unique_lock lock(mutex_);
    if (!synced_) {
      synced_callback_ = std::move(callback);
      return;
    }
    lock.unlock();
    callback();
  }
  void on_failed(const std::function<void(std::string)>& callback) override {
    std::lock_guard lock(mutex_);
    failed_ = callback;
  }

  void set_unsynced() { synced_ = false; }
  void sync() {
    std::function<void()> callback;
    {
      std::lock_guard lock(mutex_);
      synced_ = true;
      callback = std::move(synced_callback_);
    }
    if (callback) callback();
  }
  void report_failure(const std::string& error) {
    std::function<void(std::string)> failed;
    {
      std::lock_guard lock(mutex_);
      failed = failed_;
    }
    REQUIRE(failed);
    failed(error);
  }

  std::string start_error;
  std::function<void()> on_stop;

 private:
  const std::string name_;
  Journal& journal_;
  mutable std::mutex mutex_;
  bool synced_ = true;
  std::function<void()> synced_callback_;
  std::function<void(std::string)> failed_;
};

class FakeElector final : public LeaderElector {
 public:
  explicit FakeElector(Journal& journal) : journal_(journal) {}
  bool acquire(std::stop_token stop) override {
    std::unique_lock lock(mutex_);
    waiting_ = true;
    changed_.wait(lock, stop, [&] { return granted_; });
    leading_ = granted_ && !stop.stop_requested();
    return leading_;
  }
  void on_lost(std::function<void()> callback) override {
    std::lock_guard lock(mutex_);
    lost_ = std::move(callback);
  }
  bool is_leader() const override {
    std::lock_guard lock(mutex_);
    return leading_;
  }
  void release() override { journal_.add("release"); }

  bool waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
  }
  void grant() {
    std::lock_guard lock(mutex_);
    granted_ = true;
    changed_.notify_all();
  }
  void lose() {
    std::function<void()> lost;
    {
      std::lock_guard lock(mutex_);
      leading_ = false;
      lost = lost_;
    }
    lost();
  }

 private:
  Journal& journal_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  bool waiting_ = false;
  bool granted_ = false;
  bool leading_ = false;
  std::function<void()> lost_;
};

// A runnable named `name` added to `group`, journaling into `journal`.
std::shared_ptr<FakeRunnable> add(RunnableGroups& groups, RunnableGroup group, const std::string& name,
                                  Journal& journal) {
  auto runnable = std::make_shared<FakeRunnable>(name, journal);
  groups.add(group, runnable);
  return runnable;
}

// groups.run() on a thread of its own. stop() asks it to stop and returns what run() returned;
// result() waits for run() to return by itself. A run still going at the end of a test is stopped.
class Running {
 public:
  explicit Running(RunnableGroups& groups)
      : result_(std::async(std::launch::async,
                           [&groups, token = stop_.get_token()] { return groups.run(token); })) {}
  ~Running() {
    stop_.request_stop();
    if (result_.valid()) result_.wait();
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

  std::optional<RunnableFailure> stop() {
    stop_.request_stop();
    return result_.get();
  }
  std::optional<RunnableFailure> result() { return result_.get(); }

 private:
  std::stop_source stop_;
  std::future<std::optional<RunnableFailure>> result_;
};

}  // namespace

TEST_CASE("runnable groups start in order and stop in the reverse order", "[runtime][runnable_group]") {
  Journal journal;
  RunnableGroups groups({});
  // Added out of order: the group decides when each starts.
  add(groups, RunnableGroup::leader_only, "controllers", journal);
  add(groups, RunnableGroup::leader_only, "sweeper", journal);
  add(groups, RunnableGroup::caches, "cache", journal);
  add(groups, RunnableGroup::webhooks, "webhook", journal);
  add(groups, RunnableGroup::servers, "probes", journal);
  add(groups, RunnableGroup::webhook_certificates, "certificates", journal);
  add(groups, RunnableGroup::servers, "metrics", journal);

  Running running(groups);
  REQUIRE(eventually([&] { return groups.ready(RunnableGroup::leader_only); }));
  CHECK(groups.ready(RunnableGroup::caches));
  CHECK_FALSE(running.stop().has_value());
  CHECK(journal.entries() == std::vector<std::string>{"start:probes", "start:metrics", "start:certificates",
                                                      "start:webhook", "start:cache", "start:controllers",
                                                      "start:sweeper", "stop:sweeper", "stop:controllers",
                                                      "stop:cache", "stop:webhook", "stop:certificates",
                                                      "stop:metrics", "stop:probes"});
}

TEST_CASE("a group starts only once every runnable of the one before it has synced",
          "[runtime][runnable_group]") {
  Journal journal;
  auto clock = std::make_shared<myop::testing::FakeClock>();
  RunnableGroups groups({.leader_elector = nullptr, .ready_timeout = 2min, .clock = clock});
  add(groups, RunnableGroup::caches, "synced cache", journal);
  auto cache = add(groups, RunnableGroup::caches, "slow cache", journal);
  cache->set_unsynced();
  add(groups, RunnableGroup::leader_only, "controllers", journal);

  const auto timeout = clock->now() + 2min;
  Running running(groups);
  // The runner waits for the caches (both started, at once).
  REQUIRE(clock->await_deadline(timeout));
  CHECK(journal.has("start:synced cache"));
  CHECK(journal.has("start:slow cache"));
  CHECK_FALSE(journal.has("start:controllers"));
  CHECK_FALSE(groups.ready(RunnableGroup::caches));
  cache->sync();
  REQUIRE(eventually([&] { return journal.has("start:controllers"); }));
  CHECK(groups.ready(RunnableGroup::caches));
  CHECK_FALSE(running.stop().has_value());
}

TEST_CASE("a runnable that fails to start stops what was started, and the failure names it",
          "[runtime][runnable_group]") {
  Journal journal;
  RunnableGroups groups({});
  add(groups, RunnableGroup::servers, "server-probes", journal);
  add(groups, RunnableGroup::servers, "server-metrics", journal)->start_error = "address in use";
  add(groups, RunnableGroup::servers, "never started", journal);
  add(groups, RunnableGroup::caches, "cache", journal);

  std::stop_source stop;
  const auto failure = groups.run(stop.get_token());
  REQUIRE(failure.has_value());
  CHECK(failure->runnable == "server-metrics");
  CHECK(failure->error == "address in use");
  CHECK(journal.entries() == std::vector<std::string>{"start:server-probes", "start:server-metrics",
                                                      "stop:server-metrics", "stop:server-probes"});
  CHECK_FALSE(groups.ready(RunnableGroup::servers));
}

TEST_CASE("a runnable that fails while running stops every group, and the failure names it",
          "[runtime][runnable_group]") {
  Journal journal;
  RunnableGroups groups({});
  add(groups, RunnableGroup::servers, "server-probes", journal);
  auto cache = add(groups, RunnableGroup::caches, "cache", journal);
  add(groups, RunnableGroup::leader_only, "controllers", journal);

  Running running(groups);
  REQUIRE(eventually([&] { return groups.ready(RunnableGroup::leader_only); }));
  cache->report_failure("watch broken");
  cache->report_failure("a second failure does not replace the first");
  const auto failure = running.result();
  REQUIRE(failure.has_value());
  CHECK(failure->runnable == "cache");
  CHECK(failure->error == "watch broken");
  CHECK_FALSE(groups.lease_lost());
  CHECK(journal.entries() == std::vector<std::string>{"start:server-probes", "start:cache",
                                                      "start:controllers", "stop:controllers", "stop:cache",
                                                      "stop:server-probes"});
}

TEST_CASE(
    "leader-only runnables start once elected, the Lease released after they stop and before the caches",
    "[runtime][runnable_group]") {
  Journal journal;
  auto elector = std::make_shared<FakeElector>(journal);
  RunnableGroups groups({.leader_elector = elector});
  add(groups, RunnableGroup::caches, "cache", journal);
  add(groups, RunnableGroup::leader_only, "controllers", journal);

  Running running(groups);
  // The runner asks for leadership only once the caches have synced, and waits for it.
  REQUIRE(eventually([&] { return elector->waiting(); }));
  CHECK(groups.ready(RunnableGroup::caches));
  CHECK_FALSE(journal.has("start:controllers"));
  elector->grant();
  REQUIRE(eventually([&] { return groups.ready(RunnableGroup::leader_only); }));
  CHECK_FALSE(running.stop().has_value());
  CHECK(journal.entries() == std::vector<std::string>{"start:cache", "start:controllers", "stop:controllers",
                                                      "release", "stop:cache"});
}

TEST_CASE("a stop while waiting for leadership starts no leader-only runnable and is no failure",
          "[runtime][runnable_group]") {
  Journal journal;
  auto elector = std::make_shared<FakeElector>(journal);
  RunnableGroups groups({.leader_elector = elector});
  add(groups, RunnableGroup::caches, "cache", journal);
  add(groups, RunnableGroup::leader_only, "controllers", journal);

  Running running(groups);
  REQUIRE(eventually([&] { return elector->waiting(); }));
  CHECK_FALSE(running.stop().has_value());
  CHECK(journal.entries() == std::vector<std::string>{"start:cache", "release", "stop:cache"});
}

TEST_CASE("lost leadership is a failure that cancels at once and keeps the Lease unreleased",
          "[runtime][runnable_group]") {
  Journal journal;
  auto elector = std::make_shared<FakeElector>(journal);
  elector->grant();
  RunnableGroups groups({.leader_elector = elector});
  add(groups, RunnableGroup::caches, "cache", journal);
  bool lost_when_stopped = false;
  add(groups, RunnableGroup::leader_only, "controllers", journal)->on_stop = [&] {
    lost_when_stopped = groups.lease_lost();
  };

  Running running(groups);
  REQUIRE(eventually([&] { return groups.ready(RunnableGroup::leader_only); }));
  elector->lose();
  const auto failure = running.result();
  REQUIRE(failure.has_value());
  CHECK(failure->runnable == "leader election");
  CHECK(groups.lease_lost());
  // What stops the writers knows to give them no grace period.
  CHECK(lost_when_stopped);
  CHECK(journal.entries() ==
        std::vector<std::string>{"start:cache", "start:controllers", "stop:controllers", "stop:cache"});
}

TEST_CASE(
    "a group that does not sync within the ready timeout fails, naming the runnable, on the injected clock",
    "[runtime][runnable_group]") {
  Journal journal;
  auto clock = std::make_shared<myop::testing::FakeClock>();
  RunnableGroups groups({.leader_elector = nullptr, .ready_timeout = 2min, .clock = clock});
  add(groups, RunnableGroup::caches, "myresources", journal);
  add(groups, RunnableGroup::caches, "deployments", journal)->set_unsynced();
  add(groups, RunnableGroup::leader_only, "controllers", journal);

  const auto gives_up_at = clock->now() + 2min;
  Running running(groups);
  REQUIRE(clock->await_deadline(gives_up_at));
  clock->advance(2min);
  const auto failure = running.result();
  REQUIRE(failure.has_value());
  CHECK(failure->runnable == "deployments");
  CHECK(failure->error == "not synced within 120 s");
  CHECK(journal.entries() == std::vector<std::string>{"start:myresources", "start:deployments",
                                                      "stop:deployments", "stop:myresources"});
}

TEST_CASE("a failure reported while stopping does not count", "[runtime][runnable_group]") {
  Journal journal;
  RunnableGroups groups({});
  auto cache = add(groups, RunnableGroup::caches, "cache", journal);
  cache->on_stop = [&] { cache->report_failure("cut short by the stop"); };
  Running running(groups);
  REQUIRE(eventually([&] { return groups.ready(RunnableGroup::leader_only); }));
  CHECK_FALSE(running.stop().has_value());
  CHECK(journal.entries() == std::vector<std::string>{"start:cache", "stop:cache"});
}

TEST_CASE("a stop before run() starts nothing", "[runtime][runnable_group]") {
  Journal journal;
  RunnableGroups groups({});
  add(groups, RunnableGroup::servers, "server-probes", journal);
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(groups.run(stop.get_token()).has_value());
  CHECK(journal.entries().empty());
}
