// The client-wide wait after a 429 with Retry-After (kube/server_backoff.h).
#include "kube/server_backoff.h"

#include <catch2/catch.hpp>

#include "support/fake_clock.h"

using namespace std::chrono_literals;
using myop::kube::holds_for_server_backoff;
using myop::kube::ServerBackoff;
using myop::testing::FakeClock;

TEST_CASE("the server's wait holds until its end, extended by a later one, never shortened",
          "[kube][server_backoff]") {
  auto clock = std::make_shared<FakeClock>();
  ServerBackoff backoff(clock, 0.2);
  CHECK(backoff.remaining() == 0s);

  backoff.asked_to_wait(32s);
  CHECK(backoff.remaining() == 32s);
  clock->advance(10s);
  CHECK(backoff.remaining() == 22s);

  // A shorter wait asked later ends before the one in force: nothing changes.
  backoff.asked_to_wait(5s);
  CHECK(backoff.remaining() == 22s);
  // A longer one moves the end.
  backoff.asked_to_wait(30s);
  CHECK(backoff.remaining() == 30s);

  clock->advance(30s);
  CHECK(backoff.remaining() == 0s);
  clock->advance(1h);
  CHECK(backoff.remaining() == 0s);
  backoff.asked_to_wait(-1s);
  CHECK(backoff.remaining() == 0s);
}

TEST_CASE("a request held by the server's wait goes at its end plus up to the jitter share of it",
          "[kube][server_backoff]") {
  auto clock = std::make_shared<FakeClock>();
  ServerBackoff backoff(clock, 0.2);
  CHECK(backoff.hold(0.5) == 0s);

  backoff.asked_to_wait(10s);
  clock->advance(4s);
  // The held requests spread over [end, end + 20 % of the 10 s asked for), not all at the end.
  CHECK(backoff.hold(0.0) == 6s);
  CHECK(backoff.hold(0.5) == 7s);
  CHECK(backoff.hold(0.999) > 7900ms);
  CHECK(backoff.hold(0.999) < 8s);
  CHECK(backoff.hold(7.0) == 8s);  // a draw out of [0, 1) is clamped

  // The spread follows the wait that set the end: a shorter one that ends earlier changes neither.
  backoff.asked_to_wait(1s);
  CHECK(backoff.hold(0.5) == 7s);
  backoff.asked_to_wait(30s);
  CHECK(backoff.hold(0.5) == 33s);

  // Once the end has passed nothing is held, whatever the draw.
  clock->advance(30s);
  CHECK(backoff.hold(0.999) == 0s);

  ServerBackoff no_jitter(clock, 0.0);
  no_jitter.asked_to_wait(3s);
  CHECK(no_jitter.hold(0.999) == 3s);
}

TEST_CASE("Lease requests are not held by the server's wait, everything else is", "[kube][server_backoff]") {
  CHECK_FALSE(holds_for_server_backoff("/apis/coordination.k8s.io/v1/namespaces/a/leases/my-operator"));
  CHECK(holds_for_server_backoff("/apis/apps/v1/namespaces/a/deployments/web"));
  CHECK(holds_for_server_backoff("/apis/myorg.io/v1alpha1/namespaces/a/myresources/web/status"));
  CHECK(holds_for_server_backoff("/api/v1/namespaces/a/events"));
}
