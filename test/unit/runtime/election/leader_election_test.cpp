// The leader elector's timers on a fake clock, against a scripted Lease API (the real server is in
// test/integration/runtime/election/leader_election_test.cpp).
#include "runtime/election/leader_election.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "base/time_format.h"
#include "support/fake_clock.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::testing::FakeClock;

namespace {

// No Lease at first, so the first candidate creates it; once `failing`, every request gets a 503.
class LeaseApi final : public kube::Transport {
 public:
  std::atomic<bool> failing{false};

  kube::Result<kube::Response> send(const kube::Request& request, std::stop_token) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (failing) return kube::Response{503, "", "text/plain"};
    if (request.method == "GET") {
      return kube::Response{
          404, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})",
          "application/json"};
    }
    return kube::Response{201, request.body, "application/json"};
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler&, std::stop_token,
                                       const kube::StreamOptions&) override {
    return kube::make_error(kube::Reason::Unknown, "no streams here");
  }
  const std::string& host() const override { return host_; }

  std::vector<kube::Request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  std::mutex mutex_;
  std::vector<kube::Request> requests_;
  std::string host_ = "test:443";
};

}  // namespace

TEST_CASE("a leader whose renewals fail stops writing at its renew deadline on the clock",
          "[runtime][leader_election]") {
  auto clock = std::make_shared<FakeClock>();
  auto api = std::make_shared<LeaseApi>();
  LeaderElectionOptions options;
  options.namespace_name = "operators";
  options.name = "test-lease";
  options.identity = "me";
  options.lease_duration = 15s;
  options.renew_deadline = 10s;
  options.retry_period = 2s;
  options.clock = clock;
  LeaseLeaderElector elector(std::make_shared<kube::Client>(api, "leader-election-test"), options);
  std::mutex mutex;
  std::condition_variable lost_condition;
  bool lost = false;
  elector.on_lost([&] {
    std::lock_guard lock(mutex);
    lost = true;
    lost_condition.notify_all();
  });

  const auto acquired_at = clock->wall_now();
  REQUIRE(elector.acquire({}));
  CHECK(elector.may_write());
  auto create = api->requests().back();
  REQUIRE(create.method == "POST");
  // The Lease carries the clock's wall time.
  CHECK_THAT(create.body, Catch::Contains("\"renewTime\":\"" + base::format_micro_time(acquired_at) + "\""));

  // The renew loop sleeps a retry period; the deadline watch until the last renewal + 10 s - 1 s.
  const auto start = clock->now();
  REQUIRE(clock->await_deadline(start + 2s));
  REQUIRE(clock->await_deadline(start + 9s));
  api->failing = true;
  clock->advance(8s);  // renewals fail, but the deadline has not come
  CHECK(elector.may_write());
  CHECK(elector.is_leader());
  {
    std::lock_guard lock(mutex);
    CHECK_FALSE(lost);
  }
  clock->advance(1s);
  {
    std::unique_lock lock(mutex);
    REQUIRE(lost_condition.wait_for(lock, 10s, [&] { return lost; }));
  }
  CHECK_FALSE(elector.may_write());
  CHECK_FALSE(elector.is_leader());
}
