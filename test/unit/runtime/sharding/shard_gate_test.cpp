// The shard gate: tickets only for active slots, and deactivate() returns only once the tickets taken
// before it are back, so nothing of this replica writes in a slot it hands over.
#include "runtime/sharding/shard_gate.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "support/eventually.h"
#include "support/fake_clock.h"
#include "support/thread_state.h"

using namespace std::chrono_literals;
using namespace myop::runtime;
using myop::testing::eventually;

namespace {

// A gate whose membership deadline never passes (the deadline has a test of its own).
struct OpenGate : ShardGate {
  OpenGate() { extend_deadline(TimePoint::max()); }
};

// A namespace whose slot is `slot`.
std::string namespace_in(int slot) {
  for (int i = 0;; ++i) {
    std::string name = "team-" + std::to_string(i);
    if (shard_slot(name) == slot) return name;
  }
}

}  // namespace

TEST_CASE("a ticket is given only for a namespace of an active slot", "[runtime][sharding]") {
  OpenGate gate;
  const std::string in_three = namespace_in(3);
  const std::string in_five = namespace_in(5);
  CHECK_FALSE(gate.enter(in_three));
  gate.activate(3);
  auto ticket = gate.enter(in_three);
  REQUIRE(ticket);
  CHECK(ticket->slot() == 3);
  CHECK(gate.in_flight(3) == 1);
  CHECK_FALSE(gate.enter(in_five));
  CHECK(gate.active_slots() == std::vector<int>{3});
  ticket.reset();
  CHECK(gate.in_flight(3) == 0);
}

TEST_CASE("deactivate refuses new tickets at once and waits for those out", "[runtime][sharding]") {
  OpenGate gate;
  const std::string name = namespace_in(7);
  gate.activate(7);
  auto held = std::make_unique<std::optional<ShardGate::Ticket>>(gate.enter(name));
  REQUIRE(*held);
  std::atomic<bool> returned{false};
  std::atomic<pid_t> deactivating{0};
  auto deactivated = std::async(std::launch::async, [&] {
    deactivating = myop::testing::current_thread_id();
    const bool drained = gate.deactivate(7);
    returned = true;
    return drained;
  });
  // Refused as soon as deactivate has marked the slot (it does so before waiting).
  // (CHECKs, not REQUIREs, until the ticket is back: ending the case earlier would block on the future.)
  CHECK(eventually([&] { return !gate.active(7); }));
  CHECK_FALSE(gate.enter(name));
  // Then it waits for the ticket: its thread goes to sleep, without returning first. (Slot marked and
  // wait entered under one lock: once the slot reads inactive, the thread is in its wait or past it.)
  CHECK(eventually([&] { return returned || myop::testing::thread_asleep(deactivating); }));
  CHECK_FALSE(returned);  // the ticket is still out
  held.reset();
  CHECK(deactivated.get());
  CHECK(returned);
  CHECK(gate.in_flight(7) == 0);
}

TEST_CASE("a deactivation given up by its stop token leaves the slot refused", "[runtime][sharding]") {
  OpenGate gate;
  const std::string name = namespace_in(1);
  gate.activate(1);
  auto ticket = gate.enter(name);
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(gate.deactivate(1, stop.get_token()));
  CHECK_FALSE(gate.active(1));
  CHECK_FALSE(gate.enter(name));
}

TEST_CASE("close refuses every slot and activation after it", "[runtime][sharding]") {
  OpenGate gate;
  gate.activate(0);
  gate.activate(0);  // already active: nothing changes
  CHECK(gate.active_slots() == std::vector<int>{0});
  gate.close();
  CHECK(gate.active_slots().empty());
  CHECK_FALSE(gate.enter(namespace_in(0)));
  gate.activate(2);
  CHECK_FALSE(gate.active(2));
}

TEST_CASE("tickets and deactivation race without a ticket slipping through", "[runtime][sharding]") {
  // Workers take tickets in a loop and count the work they do while holding one; once deactivate
  // returns, no work may be counted any more.
  OpenGate gate;
  const std::string name = namespace_in(9);
  gate.activate(9);
  // Every worker is seen taking tickets before the deactivation and being refused after it, so the
  // race is run whatever the machine's speed.
  constexpr int kWorkers = 4;
  std::atomic<bool> drained{false};
  std::atomic<int> after_drain{0};
  std::atomic<bool> done{false};
  std::vector<std::atomic<int>> taken(kWorkers);
  std::vector<std::atomic<int>> refused_after_drain(kWorkers);
  std::vector<std::thread> workers;
  workers.reserve(kWorkers);
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&, i] {
      while (!done) {
        if (auto ticket = gate.enter(name)) {
          ++taken[i];
          std::this_thread::sleep_for(100us);  // holding it: deactivate has to wait for it
          if (drained) ++after_drain;
        } else if (drained) {
          ++refused_after_drain[i];
        }
      }
    });
  }
  const auto every_worker = [&](const std::vector<std::atomic<int>>& counts, int at_least) {
    return std::all_of(counts.begin(), counts.end(),
                       [at_least](const auto& count) { return count >= at_least; });
  };
  const bool busy = eventually([&] { return every_worker(taken, 20); });
  const bool deactivated = gate.deactivate(9);
  drained = true;
  const bool kept_trying = eventually([&] { return every_worker(refused_after_drain, 20); });
  done = true;
  for (auto& worker : workers) worker.join();
  REQUIRE(busy);
  REQUIRE(deactivated);
  REQUIRE(kept_trying);
  CHECK(after_drain == 0);
}

TEST_CASE("no ticket and no write once the membership deadline has passed", "[runtime][sharding]") {
  auto clock = std::make_shared<myop::testing::FakeClock>();
  ShardGate gate(kShardSlots, clock);
  const std::string name = namespace_in(4);
  gate.activate(4);
  CHECK_FALSE(gate.enter(name));  // no renewal yet
  CHECK_FALSE(gate.may_write(name));
  gate.extend_deadline(clock->now() + 9s);
  auto ticket = gate.enter(name);
  CHECK(ticket);
  CHECK(gate.may_write(name));
  clock->advance(8s);
  CHECK(gate.may_write(name));
  // A deadline earlier than the one held does not shorten it.
  gate.extend_deadline(clock->now());
  CHECK(gate.may_write(name));
  clock->advance(1s);
  // Past it: the ticket already out cannot write, and no new ticket is given.
  CHECK_FALSE(gate.may_write(name));
  CHECK_FALSE(gate.enter(name));
  CHECK_FALSE(gate.may_write(namespace_in(5)));
}
