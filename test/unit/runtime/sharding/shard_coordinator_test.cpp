// Membership liveness as the coordinator judges it: on this replica's clock, from renewTime changes it
// has seen. (The Lease protocol itself runs against the real API server:
// test/integration/myresource/sharding_test.cpp.)
#include "runtime/sharding/shard_coordinator.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace myop::runtime;

TEST_CASE("a member expires lease_duration after the last renewal seen here", "[runtime][sharding]") {
  MemberLiveness liveness;
  const TimePoint start{};
  liveness.observe("a", "t1", start);
  CHECK_FALSE(liveness.expired("a", start + 14s, 15s));
  CHECK(liveness.expired("a", start + 15s, 15s));
  // Seeing the same renewTime again is no renewal.
  liveness.observe("a", "t1", start + 10s);
  CHECK(liveness.expired("a", start + 15s, 15s));
  // A new renewTime restarts the clock, whatever time it names.
  liveness.observe("a", "t0-older-text", start + 20s);
  CHECK_FALSE(liveness.expired("a", start + 30s, 15s));
  CHECK(liveness.last_renew_time("a") == "t0-older-text");
}

TEST_CASE("a slot holder never seen renewing is given a full lease duration from first sight",
          "[runtime][sharding]") {
  MemberLiveness liveness;
  const TimePoint start{};
  CHECK_FALSE(liveness.expired("ghost", start + 1h, 15s));  // unknown: not judged
  liveness.notice("ghost", start + 1h);
  CHECK_FALSE(liveness.expired("ghost", start + 1h + 14s, 15s));
  CHECK(liveness.expired("ghost", start + 1h + 15s, 15s));
  CHECK_FALSE(liveness.last_renew_time("ghost"));
  // Noticing again does not restart the clock; a Lease seen later does.
  liveness.notice("ghost", start + 1h + 10s);
  CHECK(liveness.expired("ghost", start + 1h + 15s, 15s));
  liveness.observe("ghost", "t", start + 1h + 16s);
  CHECK_FALSE(liveness.expired("ghost", start + 1h + 20s, 15s));
}

TEST_CASE("members not seen for long are forgotten", "[runtime][sharding]") {
  MemberLiveness liveness;
  const TimePoint start{};
  liveness.observe("old", "t", start);
  liveness.observe("new", "t", start + 100s);
  liveness.forget_older_than(start + 150s, 100s);
  CHECK_FALSE(liveness.last_renew_time("old"));
  CHECK(liveness.last_renew_time("new") == "t");
}

TEST_CASE("how long a member has been known counts from first sight, not from its renewals",
          "[runtime][sharding]") {
  MemberLiveness liveness;
  const TimePoint start{};
  CHECK(liveness.known_for("new", start + 5s) == Duration::zero());  // never seen
  liveness.observe("new", "t1", start + 10s);
  CHECK(liveness.known_for("new", start + 11s) == 1s);
  liveness.observe("new", "t2", start + 12s);  // a renewal: still known since 10 s
  CHECK(liveness.known_for("new", start + 13s) == 3s);
  liveness.notice("holder", start + 20s);  // seen holding a slot before its Lease
  liveness.observe("holder", "t", start + 21s);
  CHECK(liveness.known_for("holder", start + 22s) == 2s);
}
