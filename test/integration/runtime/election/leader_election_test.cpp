// Leader election on a real Lease: exactly one leader; a graceful stop releases the Lease and the
// standby takes over within 3 s; a leader cut off from the API server stops writing before its
// renew deadline.
#include <catch2/catch.hpp>

#include <future>
#include <set>
#include <string>

#include "runtime/election/leader_election.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;
using namespace std::chrono_literals;

namespace {

LeaderElectionOptions options_for(const std::string& namespace_name, const std::string& identity) {
  LeaderElectionOptions options;
  options.namespace_name = namespace_name;
  options.name = "rt-test-lease";
  options.identity = identity;
  return options;
}

std::string lease_holder(const std::string& namespace_name) {
  return testenv::kubectl("get lease rt-test-lease -n " + namespace_name +
                          " -o jsonpath={.spec.holderIdentity}")
      .output;
}

std::string lease_renew_time(const std::string& namespace_name) {
  return testenv::kubectl("get lease rt-test-lease -n " + namespace_name + " -o jsonpath={.spec.renewTime}")
      .output;
}

}  // namespace

TEST_CASE("two candidates: exactly one leads, release hands over within 3 s", "[runtime][leader_election]") {
  testenv::ScopedNamespace ns("rt-lease");
  auto first = std::make_shared<LeaseLeaderElector>(admin_client(), options_for(ns.name(), "first"));
  auto second = std::make_shared<LeaseLeaderElector>(admin_client(), options_for(ns.name(), "second"));
  std::atomic<bool> first_lost{false};
  std::atomic<bool> second_lost{false};
  first->on_lost([&] { first_lost = true; });
  second->on_lost([&] { second_lost = true; });

  std::stop_source stop_first;
  std::stop_source stop_second;
  auto first_leads = std::async(std::launch::async, [&] { return first->acquire(stop_first.get_token()); });
  auto second_leads =
      std::async(std::launch::async, [&] { return second->acquire(stop_second.get_token()); });
  REQUIRE(eventually([&] { return first->is_leader() || second->is_leader(); }, 30s));
  // Several renewals later (each a new renewTime on the Lease) there is still exactly one, and there
  // never were two meanwhile.
  std::set<std::string> renewals;
  bool both = false;
  REQUIRE(eventually(
      [&] {
        both = both || (first->is_leader() && second->is_leader());
        renewals.insert(lease_renew_time(ns.name()));
        return renewals.size() >= 4;
      },
      60s));
  CHECK_FALSE(both);
  REQUIRE(first->is_leader() != second->is_leader());
  auto& leader = first->is_leader() ? first : second;
  auto& standby = first->is_leader() ? second : first;
  auto& leader_future = first->is_leader() ? first_leads : second_leads;
  CHECK(leader_future.get());
  CHECK(lease_holder(ns.name()) == leader->identity());
  CHECK(leader->may_write());
  CHECK_FALSE(standby->may_write());

  const auto released_at = std::chrono::steady_clock::now();
  leader->release();
  REQUIRE(eventually([&] { return standby->is_leader(); }, 10s));
  const auto takeover = std::chrono::steady_clock::now() - released_at;
  CHECK(takeover < 3s);
  CHECK(lease_holder(ns.name()) == standby->identity());
  CHECK_FALSE(first_lost);
  CHECK_FALSE(second_lost);
  standby->release();
  stop_first.request_stop();
  stop_second.request_stop();
}

TEST_CASE("a leader cut off from the API server stops writing before its renew deadline",
          "[runtime][leader_election]") {
  testenv::ScopedNamespace ns("rt-lease-cut");
  auto transport = std::make_shared<CuttableTransport>(admin_transport());
  auto client = std::make_shared<kube::Client>(transport, "myop-runtime-integration");
  LeaseLeaderElector leader(client, options_for(ns.name(), "cut-off"));
  std::atomic<bool> lost{false};
  std::chrono::steady_clock::time_point lost_at;
  leader.on_lost([&] {
    lost_at = std::chrono::steady_clock::now();
    lost = true;
  });
  std::stop_source stop;
  REQUIRE(leader.acquire(stop.get_token()));
  // A renewal: a write after the one that acquired the Lease.
  const auto writes_sent = [&] {
    std::size_t writes = 0;
    for (const auto& sent : transport->sent())
      writes += sent.method == "PUT" || sent.method == "POST" ? 1 : 0;
    return writes;
  };
  REQUIRE(eventually([&] { return writes_sent() >= 2; }, 30s));
  auto writes_before_cut = transport->sent();
  std::chrono::steady_clock::time_point last_write{};
  for (const auto& sent : writes_before_cut) {
    if (sent.method == "PUT" || sent.method == "POST") last_write = sent.at;
  }
  REQUIRE(last_write != std::chrono::steady_clock::time_point{});
  transport->cut();
  REQUIRE(eventually([&] { return lost.load(); }, 30s));
  CHECK_FALSE(leader.may_write());
  CHECK_FALSE(leader.is_leader());
  // Lost within the renew deadline (10 s) of the last successful renewal.
  CHECK(lost_at - last_write < 10s);
  // No write went out after the cut (and none could after the deadline).
  for (const auto& sent : transport->sent()) {
    if (sent.method != "GET") CHECK(sent.at <= lost_at);
  }
  // The other replica can take the Lease once it has expired (15 s), never before.
  auto other = std::make_shared<LeaseLeaderElector>(admin_client(), options_for(ns.name(), "successor"));
  std::stop_source stop_other;
  CHECK(other->acquire(stop_other.get_token()));
  other->release();
}
