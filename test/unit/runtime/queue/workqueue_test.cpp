#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "runtime/queue/workqueue.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using namespace myop::runtime;
using myop::testing::FakeClock;

namespace {

struct Fixture {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  WorkQueueOptions options(Duration aging = 1s) {
    WorkQueueOptions result;
    result.clock = clock;
    result.aging_interval = aging;
    return result;
  }
};

ObjectKey key(const std::string& tenant, const std::string& name) { return {tenant, name}; }
ObjectKey key(ClusterId cluster, const std::string& tenant, const std::string& name) {
  return {tenant, name, cluster};
}

}  // namespace

TEST_CASE("duplicate adds collapse into one item", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"));
  queue.add(key("a", "x"));
  queue.add(key("a", "x"), {Priority::high});
  CHECK(queue.depth() == 1);
  auto item = queue.try_get();
  REQUIRE(item);
  CHECK(item->priority == Priority::high);
  CHECK_FALSE(queue.try_get());
  queue.done(*item, Completion::success());
  CHECK_FALSE(queue.try_get());
}

TEST_CASE("a key held by a worker is not handed out again until done", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"));
  auto first = queue.try_get();
  REQUIRE(first);
  queue.add(key("a", "x"));
  CHECK(queue.is_in_flight(key("a", "x")));
  CHECK_FALSE(queue.try_get());
  queue.done(*first, Completion::success());
  auto second = queue.try_get();
  REQUIRE(second);
  CHECK(second->key == key("a", "x"));
}

TEST_CASE("delayed adds become ready at their time", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"), {Priority::normal, 10s});
  CHECK(queue.depth() == 1);
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(9s);
  CHECK_FALSE(queue.try_get());
  // An earlier add wins over the later one.
  queue.add(key("a", "x"), {Priority::normal, 0s});
  CHECK(queue.try_get());
}

TEST_CASE("requeue_after resets backoff and waits", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"));
  auto item = queue.try_get();
  queue.done(*item, Completion::retry());
  CHECK(queue.failures(key("a", "x")) == 1);
  fixture.clock->advance(5ms);
  item = queue.try_get();
  REQUIRE(item);
  queue.done(*item, Completion::after(30s, Priority::low));
  CHECK(queue.failures(key("a", "x")) == 0);
  fixture.clock->advance(29s);
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(1s);
  item = queue.try_get();
  REQUIRE(item);
  CHECK(item->priority == Priority::low);
}

TEST_CASE("higher priority is handed out first, FIFO within a priority", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "low1"), {Priority::low});
  queue.add(key("a", "normal1"), {Priority::normal});
  queue.add(key("a", "high1"), {Priority::high});
  queue.add(key("a", "low2"), {Priority::low});
  queue.add(key("a", "high2"), {Priority::high});
  // Raising the priority of a waiting key moves it up.
  queue.add(key("a", "low2"), {Priority::normal});
  std::vector<std::string> order;
  while (auto item = queue.try_get()) {
    order.push_back(item->key.name);
    queue.done(*item, Completion::success());
  }
  CHECK(order == std::vector<std::string>{"high1", "high2", "normal1", "low2", "low1"});
}

TEST_CASE("a low item under constant high load is served within the aging bound", "[runtime][workqueue]") {
  Fixture fixture;
  const Duration aging = GENERATE(1s, 1000s);
  WorkQueue queue(fixture.options(aging));
  queue.add(key("tenant", "starving"), {Priority::low});
  int next = 0;
  int steps_until_served = -1;
  // Each 10 ms step: two new high items arrive from a busy tenant, one is processed. The high
  // backlog grows forever, so without aging the low item would never run.
  for (int step = 0; step < 1000 && steps_until_served < 0; ++step) {
    queue.add(key("busy", std::to_string(next++)), {Priority::high});
    queue.add(key("busy", std::to_string(next++)), {Priority::high});
    auto item = queue.try_get();
    REQUIRE(item);
    if (item->key.name == "starving") steps_until_served = step;
    queue.done(*item, Completion::success());
    fixture.clock->advance(10ms);
  }
  if (aging == 1s) {
    // Two promotions (low -> normal -> high) of 1 s each is 200 steps; then one turn.
    REQUIRE(steps_until_served >= 0);
    CHECK(steps_until_served <= 205);
  } else {
    CHECK(steps_until_served == -1);
  }
}

TEST_CASE("aging does not let a big low backlog swamp high work", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options(1s));
  for (int i = 0; i < 1000; ++i) queue.add(key("a", "initial" + std::to_string(i)), {Priority::low});
  fixture.clock->advance(10s);
  queue.add(key("a", "user-change"), {Priority::high});
  // At most a couple of aged items may go first; the user change is served almost at once.
  int position = 0;
  while (auto item = queue.try_get()) {
    ++position;
    queue.done(*item, Completion::success());
    if (item->key.name == "user-change") break;
  }
  CHECK(position <= 3);
}

TEST_CASE("a worker is kept for user changes: backlog work holds at most the others",
          "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueueOptions options = fixture.options(1s);
  options.max_below_high_in_flight = 2;  // three workers, one kept
  WorkQueue queue(options);
  for (int i = 0; i < 100; ++i) queue.add(key("backlog", "b" + std::to_string(i)), {Priority::low});
  queue.add(key("children", "status"), {Priority::normal});
  auto first = queue.try_get();
  auto second = queue.try_get();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->key == key("children", "status"));
  CHECK_FALSE(queue.try_get());  // the third worker waits for a user change
  queue.add(key("user", "change"), {Priority::high});
  auto user = queue.try_get();
  REQUIRE(user);
  CHECK(user->key == key("user", "change"));
  queue.done(*user, Completion::success());
  CHECK_FALSE(queue.try_get());

  // Backlog promoted to high by aging is still backlog: it does not take the kept worker.
  // (Aging moves one item per level per interval, on each look at the queue.)
  fixture.clock->advance(2s);
  CHECK_FALSE(queue.try_get());  // the oldest low item is now normal
  fixture.clock->advance(2s);
  CHECK_FALSE(queue.try_get());  // and now high
  CHECK(queue.depth(Priority::high) == 1);
  queue.add(key("user", "second-change"), {Priority::high});
  auto second_user = queue.try_get();
  REQUIRE(second_user);
  CHECK(second_user->key == key("user", "second-change"));

  // A finished backlog item frees its place for the next one, and wakes a waiting get().
  auto waiting = std::async(std::launch::async, [&] { return queue.get(); });
  queue.done(*first, Completion::success());
  auto next = waiting.get();
  REQUIRE(next);
  CHECK(next->key.namespace_name == "backlog");
  CHECK_FALSE(queue.try_get());
}

TEST_CASE("tenants take turns: a storm in one namespace does not delay another", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  const auto priority = GENERATE(Priority::low, Priority::high);
  for (int i = 0; i < 10000; ++i) queue.add(key("tenant-a", "a" + std::to_string(i)), {priority});
  for (int i = 0; i < 10; ++i) queue.add(key("tenant-b", "b" + std::to_string(i)), {priority});
  int b_finished = 0;
  while (b_finished < 10) {
    auto item = queue.try_get();
    REQUIRE(item);
    if (item->key.namespace_name == "tenant-b") ++b_finished;
    queue.done(*item, Completion::success());
    fixture.clock->advance(1ms);
  }
  CHECK(queue.depth() >= 9980);
}

TEST_CASE("clusters take turns before tenants: a backlog in one cluster does not delay another",
          "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  const auto priority = GENERATE(Priority::low, Priority::normal, Priority::high);
  // Cluster 1: 5,000 keys over 50 namespaces; cluster 2: one namespace with 10 keys, added last.
  for (int i = 0; i < 5000; ++i) {
    queue.add(key(1, "ns-" + std::to_string(i % 50), "a" + std::to_string(i)), {priority});
  }
  for (int i = 0; i < 10; ++i) queue.add(key(2, "ns-0", "b" + std::to_string(i)), {priority});
  // Every second hand-out is cluster 2's until it has none left: its 50 tenants give cluster 1 no
  // more turns than cluster 2's one.
  std::vector<ClusterId> order;
  for (int i = 0; i < 24; ++i) {
    auto item = queue.try_get();
    REQUIRE(item);
    order.push_back(item->key.cluster);
    queue.done(*item, Completion::success());
  }
  const std::vector<ClusterId> expected{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2,
                                        1, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1};
  CHECK(order == expected);
  CHECK(queue.depth() == 4986);
}

TEST_CASE("no cluster holds more workers than max_in_flight_per_cluster", "[runtime][workqueue][fleet]") {
  Fixture fixture;
  WorkQueueOptions options = fixture.options();
  options.max_in_flight_per_cluster = 3;
  WorkQueue queue(options);
  for (int i = 0; i < 10; ++i) queue.add(key(1, "ns", "a" + std::to_string(i)), {Priority::high});
  // Cluster 1's API server hangs: three of its keys are held by workers that do not come back soon.
  std::vector<WorkItem> held;
  for (int i = 0; i < 3; ++i) {
    auto item = queue.try_get();
    REQUIRE(item);
    held.push_back(*item);
  }
  // The fourth worker finds nothing of cluster 1 to take, even at high priority...
  CHECK_FALSE(queue.try_get());
  // ...and takes another cluster's change at once, even a low one.
  queue.add(key(2, "ns", "b"), {Priority::low});
  auto other = queue.try_get();
  REQUIRE(other);
  CHECK(other->key == key(2, "ns", "b"));
  queue.done(*other, Completion::success());
  // One of cluster 1's comes back: the next of cluster 1 may go.
  queue.done(held.back(), Completion::success());
  held.pop_back();
  auto next = queue.try_get();
  REQUIRE(next);
  CHECK(next->key.cluster == 1);
  CHECK_FALSE(queue.try_get());
}

TEST_CASE("within a cluster's turn its tenants take turns", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  for (int i = 0; i < 3; ++i) {
    queue.add(key(1, "a", "a" + std::to_string(i)));
    queue.add(key(1, "b", "b" + std::to_string(i)));
  }
  queue.add(key(kLocalCluster, "a", "local"));
  std::vector<std::string> order;
  while (auto item = queue.try_get()) {
    order.push_back(item->key.to_string());
    queue.done(*item, Completion::success());
  }
  // Cluster 1 came first; then the local cluster; then cluster 1 alone, its tenants alternating.
  const std::vector<std::string> expected{"#1:a/a0", "a/local", "#1:b/b0", "#1:a/a1",
                                          "#1:b/b1", "#1:a/a2", "#1:b/b2"};
  CHECK(order == expected);
}

TEST_CASE("one namespace and name in two clusters are two keys", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key(kLocalCluster, "ns", "web"));
  queue.add(key(7, "ns", "web"));
  queue.add(key(7, "ns", "web"));
  CHECK(queue.depth() == 2);
  auto first = queue.try_get();
  auto second = queue.try_get();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->key.cluster != second->key.cluster);
  CHECK(queue.is_in_flight(key(kLocalCluster, "ns", "web")));
  CHECK(queue.is_in_flight(key(7, "ns", "web")));
  CHECK(ObjectKeyHash{}(key(kLocalCluster, "ns", "web")) != ObjectKeyHash{}(key(7, "ns", "web")));
}

TEST_CASE("the kept worker finds a user change in any cluster behind aged backlog", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueueOptions options = fixture.options(1s);
  options.max_below_high_in_flight = 1;
  WorkQueue queue(options);
  for (int i = 0; i < 10; ++i) queue.add(key(1, "backlog", "b" + std::to_string(i)), {Priority::low});
  auto backlog = queue.try_get();
  REQUIRE(backlog);
  // Two of cluster 1's backlog items age up to high: they sit in the high level ahead of the change.
  for (int i = 0; i < 3; ++i) {
    fixture.clock->advance(2s);
    CHECK_FALSE(queue.try_get());
  }
  REQUIRE(queue.depth(Priority::high) == 2);
  queue.add(key(2, "user", "change"), {Priority::high});
  auto user = queue.try_get();
  REQUIRE(user);
  CHECK(user->key == key(2, "user", "change"));
  CHECK_FALSE(queue.try_get());
}

TEST_CASE("backoff counts real failures only and resets on success", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  const ObjectKey failing = key("a", "failing");
  queue.add(failing);
  auto item = queue.try_get();
  Duration expected = 5ms;
  for (int failure = 1; failure <= 6; ++failure) {
    REQUIRE(item);
    CHECK(item->failures == failure - 1);
    queue.done(*item, Completion::retry());
    CHECK(queue.failures(failing) == failure);
    // Extra triggers from child status changes neither shorten nor lengthen the wait.
    queue.add(failing, {Priority::normal});
    queue.add(failing, {Priority::low});
    CHECK(queue.failures(failing) == failure);
    fixture.clock->advance(expected - 1ms);
    CHECK_FALSE(queue.try_get());
    fixture.clock->advance(1ms);
    item = queue.try_get();
    expected *= 2;
  }
  REQUIRE(item);
  // Extra triggers that arrive while the worker holds the key also do not cut the backoff.
  queue.add(failing, {Priority::normal});
  queue.done(*item, Completion::retry());
  CHECK(queue.failures(failing) == 7);
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(320ms);
  item = queue.try_get();
  REQUIRE(item);
  queue.done(*item, Completion::success());
  CHECK(queue.failures(failing) == 0);
  queue.add(failing);
  item = queue.try_get();
  REQUIRE(item);
  CHECK(item->failures == 0);
  queue.done(*item, Completion::retry());
  fixture.clock->advance(5ms);
  CHECK(queue.try_get());
}

TEST_CASE("a retry waits at least the API server's Retry-After, longer than its backoff",
          "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  const ObjectKey throttled = key("a", "throttled");
  queue.add(throttled);
  auto item = queue.try_get();
  REQUIRE(item);
  queue.done(*item, Completion::retry(30s));
  CHECK(queue.failures(throttled) == 1);
  // A watch event for the object does not bring it back sooner.
  queue.add(throttled, {Priority::normal});
  fixture.clock->advance(30s - 1ms);
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(1ms);
  item = queue.try_get();
  REQUIRE(item);
  // Without a Retry-After the backoff schedule is back: the second failure waits 10 ms.
  queue.done(*item, Completion::retry());
  fixture.clock->advance(9ms);
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(1ms);
  CHECK(queue.try_get());
}

TEST_CASE("a user change cuts a backoff wait short", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"));
  for (int i = 0; i < 10; ++i) {
    auto item = queue.try_get();
    REQUIRE(item);
    queue.done(*item, Completion::retry());
    fixture.clock->advance(1h);
  }
  auto item = queue.try_get();
  REQUIRE(item);
  queue.done(*item, Completion::retry());
  CHECK_FALSE(queue.try_get());
  queue.add(key("a", "x"), {Priority::high});
  item = queue.try_get();
  REQUIRE(item);
  CHECK(item->failures == 11);
}

TEST_CASE("the overall token bucket limits hand-outs", "[runtime][workqueue]") {
  Fixture fixture;
  auto options = fixture.options();
  options.rate_per_second = 2;
  options.burst = 2;
  WorkQueue queue(options);
  for (int i = 0; i < 5; ++i) queue.add(key("a", std::to_string(i)));
  CHECK(queue.try_get());
  CHECK(queue.try_get());
  CHECK_FALSE(queue.try_get());
  fixture.clock->advance(500ms);
  CHECK(queue.try_get());
  CHECK_FALSE(queue.try_get());
}

TEST_CASE("above the watermark low-priority work is deferred, not lost", "[runtime][workqueue]") {
  Fixture fixture;
  auto options = fixture.options(1000s);
  options.low_priority_watermark = 3;
  options.max_deferral = 60s;
  WorkQueue queue(options);
  for (int i = 0; i < 3; ++i) queue.add(key("a", "normal" + std::to_string(i)), {Priority::normal});
  queue.add(key("a", "resync"), {Priority::low});
  CHECK(queue.depth() == 4);
  CHECK(queue.depth(Priority::low) == 1);
  // The queue drains below the watermark: the deferred item is released behind the rest.
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    auto item = queue.try_get();
    REQUIRE(item);
    order.push_back(item->key.name);
    queue.done(*item, Completion::success());
  }
  CHECK(order.back() == "resync");

  SECTION("deferral is bounded") {
    for (int i = 0; i < 3; ++i) queue.add(key("a", "n" + std::to_string(i)), {Priority::normal});
    queue.add(key("a", "late"), {Priority::low});
    fixture.clock->advance(61s);
    // Keep the queue above the watermark: the deferred item still comes back after max_deferral.
    bool seen = false;
    for (int i = 0; i < 10 && !seen; ++i) {
      queue.add(key("a", "more" + std::to_string(i)), {Priority::low});
      auto item = queue.try_get();
      REQUIRE(item);
      seen = item->key.name == "late";
      queue.done(*item, Completion::success());
    }
    CHECK(seen);
  }
}

TEST_CASE("shut_down wakes a blocked get", "[runtime][workqueue]") {
  WorkQueue queue;
  std::atomic<bool> returned{false};
  std::thread worker([&] {
    auto item = queue.get();
    CHECK_FALSE(item);
    returned = true;
  });
  queue.shut_down();
  worker.join();
  CHECK(returned);
  queue.add(key("a", "x"));
  CHECK(queue.depth() == 0);
}

TEST_CASE("blocking get returns a delayed item once due on the clock", "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "x"), {Priority::normal, 20s});
  auto item = std::async(std::launch::async, [&] { return queue.get(); });
  // The worker sleeps until the item is due, not in slices.
  REQUIRE(fixture.clock->await_deadline(fixture.clock->now() + 20s));
  fixture.clock->advance(19s);
  CHECK(item.wait_for(0s) == std::future_status::timeout);
  fixture.clock->advance(1s);
  auto got = item.get();
  REQUIRE(got);
  CHECK(got->key == key("a", "x"));
}

TEST_CASE("a blocked get wakes for an add, and its deadline follows the earliest item",
          "[runtime][workqueue]") {
  Fixture fixture;
  WorkQueue queue(fixture.options());
  queue.add(key("a", "late"), {Priority::normal, 1h});
  auto item = std::async(std::launch::async, [&] { return queue.get(); });
  REQUIRE(fixture.clock->await_deadline(fixture.clock->now() + 1h));
  queue.add(key("a", "sooner"), {Priority::normal, 10s});
  REQUIRE(fixture.clock->await_deadline(fixture.clock->now() + 10s));
  fixture.clock->advance(10s);
  auto got = item.get();
  REQUIRE(got);
  CHECK(got->key == key("a", "sooner"));
}

TEST_CASE("a rate-limited get sleeps until the next token", "[runtime][workqueue]") {
  Fixture fixture;
  auto options = fixture.options();
  options.rate_per_second = 2.0;
  options.burst = 1;
  WorkQueue queue(options);
  queue.add(key("a", "x"));
  queue.add(key("a", "y"));
  REQUIRE(queue.try_get());
  CHECK_FALSE(queue.try_get());  // the burst is spent
  auto item = std::async(std::launch::async, [&] { return queue.get(); });
  REQUIRE(fixture.clock->await_deadline(fixture.clock->now() + 500ms));
  fixture.clock->advance(500ms);
  auto got = item.get();
  REQUIRE(got);
  CHECK(got->key == key("a", "y"));
}

// Randomized operations against a reference model. The model tracks, per key, whether it is
// "owed" a reconcile (added or requeued since a worker last took it) and which worker holds it.
TEST_CASE("randomized operations keep the queue's invariants", "[runtime][workqueue]") {
  const unsigned seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u);
  std::mt19937 random(seed);
  Fixture fixture;
  auto options = fixture.options(50ms);
  options.low_priority_watermark = (seed % 2) ? 6 : 0;
  options.max_deferral = 200ms;
  WorkQueue queue(options);

  constexpr int kWorkers = 4;
  std::vector<std::optional<WorkItem>> workers(kWorkers);
  std::map<ObjectKey, bool> owed;
  std::set<ObjectKey> held;
  auto pick = [&](int bound) { return std::uniform_int_distribution<int>(0, bound - 1)(random); };
  auto random_key = [&] {
    return key(static_cast<ClusterId>(pick(2)), "t" + std::to_string(pick(3)),
               "k" + std::to_string(pick(12)));
  };

  auto take = [&](int worker) {
    if (workers[worker]) return;
    auto item = queue.try_get();
    if (!item) return;
    INFO("key " << item->key.to_string());
    REQUIRE(held.count(item->key) == 0);  // never one key in two workers
    REQUIRE(owed[item->key]);             // never a spurious hand-out
    owed[item->key] = false;
    held.insert(item->key);
    workers[worker] = item;
  };
  auto finish = [&](int worker, int how) {
    auto& item = workers[worker];
    if (!item) return;
    held.erase(item->key);
    switch (how) {
      case 0:
        queue.done(*item, Completion::success());
        break;
      case 1:
        queue.done(*item, Completion::retry());
        owed[item->key] = true;
        break;
      default:
        queue.done(*item, Completion::after(std::chrono::milliseconds(pick(100))));
        owed[item->key] = true;
        break;
    }
    item.reset();
  };
  auto check_depth = [&] {
    std::size_t waiting = 0;
    for (const auto& [k, is_owed] : owed) waiting += (is_owed && held.count(k) == 0) ? 1 : 0;
    REQUIRE(queue.depth() == waiting);
  };

  for (int step = 0; step < 20000; ++step) {
    switch (pick(5)) {
      case 0:
      case 1: {
        const ObjectKey k = random_key();
        queue.add(k,
                  {static_cast<Priority>(pick(3)), std::chrono::milliseconds(pick(3) == 0 ? pick(50) : 0)});
        owed[k] = true;
        break;
      }
      case 2:
        take(pick(kWorkers));
        break;
      case 3:
        finish(pick(kWorkers), pick(5) == 0 ? 1 + pick(2) : 0);
        break;
      default:
        fixture.clock->advance(std::chrono::milliseconds(pick(5)));
        break;
    }
    check_depth();
  }
  // Drain: nothing that was owed may be lost. Retries may back off for a while; time moves on.
  for (int round = 0; round < 100000; ++round) {
    for (int worker = 0; worker < kWorkers; ++worker) finish(worker, 0);
    for (int worker = 0; worker < kWorkers; ++worker) take(worker);
    if (held.empty() && queue.depth() == 0) break;
    fixture.clock->advance(100ms);
  }
  INFO("depth " << queue.depth() << " held " << held.size() << " in flight " << queue.in_flight());
  for (const auto& [k, is_owed] : owed) {
    INFO("lost key " << k.to_string());
    CHECK_FALSE(is_owed);
  }
  CHECK(queue.depth() == 0);
}

TEST_CASE("real threads never process one key concurrently", "[runtime][workqueue]") {
  WorkQueueOptions options;
  options.backoff.initial = 10us;
  options.backoff.maximum = 1ms;
  WorkQueue queue(options);
  std::mutex mutex;
  std::set<ObjectKey> active;
  std::atomic<int> violations{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto item = queue.get()) {
        {
          std::lock_guard lock(mutex);
          if (!active.insert(item->key).second) ++violations;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          active.erase(item->key);
        }
        ++processed;
        queue.done(*item, processed % 7 == 0 ? Completion::retry() : Completion::success());
      }
    });
  }
  std::mt19937 random(42);
  for (int i = 0; i < 20000; ++i) {
    queue.add(key("t" + std::to_string(random() % 3), std::to_string(random() % 20)),
              {static_cast<Priority>(random() % 3)});
  }
  while (queue.depth() > 0 || queue.in_flight() > 0) std::this_thread::sleep_for(1ms);
  queue.shut_down();
  for (auto& worker : workers) worker.join();
  CHECK(violations == 0);
  CHECK(processed > 0);
}
