#include "kube/retry_policy.h"

#include <catch2/catch.hpp>

using myop::kube::Error;
using myop::kube::Reason;
using myop::kube::RetryPolicy;
using namespace std::chrono_literals;

namespace {
Error error_with(Reason reason, int code) { return myop::kube::make_error(reason, "x", code); }
RetryPolicy no_jitter() {
  return RetryPolicy({}, [] { return 0.0; });
}
}  // namespace

TEST_CASE("429 is retried for every verb, honouring Retry-After", "[kube][retry]") {
  auto policy = no_jitter();
  Error throttled = error_with(Reason::TooManyRequests, 429);
  throttled.retry_after = 3s;
  for (const char* method : {"GET", "POST", "PATCH", "PUT", "DELETE"}) {
    auto delay = policy.next_delay(1, method, throttled);
    REQUIRE(delay.has_value());
    CHECK(*delay == 3000ms);
  }
}

TEST_CASE("without Retry-After the wait doubles from 200 ms up to 10 s", "[kube][retry]") {
  auto policy = no_jitter();
  const Error unavailable = error_with(Reason::ServiceUnavailable, 503);
  CHECK(*policy.next_delay(1, "GET", unavailable) == 200ms);
  CHECK(*policy.next_delay(2, "GET", unavailable) == 400ms);
  CHECK(*policy.next_delay(3, "GET", unavailable) == 800ms);
  CHECK(*policy.next_delay(7, "GET", unavailable) == 10000ms);  // 12.8 s capped
  CHECK(*policy.next_delay(10, "GET", unavailable) == 10000ms);
}

TEST_CASE("retries stop after ten", "[kube][retry]") {
  auto policy = no_jitter();
  const Error throttled = error_with(Reason::TooManyRequests, 429);
  int retries = 0;
  while (policy.next_delay(retries + 1, "GET", throttled)) ++retries;
  CHECK(retries == 10);
}

TEST_CASE("a huge Retry-After is capped, not ignored", "[kube][retry]") {
  auto policy = no_jitter();
  Error throttled = error_with(Reason::TooManyRequests, 429);
  throttled.retry_after = 3600s;
  CHECK(*policy.next_delay(1, "GET", throttled) == 60000ms);
}

TEST_CASE("jitter adds up to 20 percent", "[kube][retry]") {
  RetryPolicy almost_full({}, [] { return 0.999; });
  Error throttled = error_with(Reason::TooManyRequests, 429);
  throttled.retry_after = 10s;
  auto delay = almost_full.next_delay(1, "GET", throttled);
  CHECK(*delay > 11900ms);
  CHECK(*delay <= 12000ms);
  RetryPolicy real;  // real randomness stays inside the band
  for (int i = 0; i < 100; ++i) {
    auto random_delay = real.next_delay(1, "GET", throttled);
    REQUIRE(*random_delay >= 10000ms);
    REQUIRE(*random_delay <= 12000ms);
  }
}

TEST_CASE("503 and 504 are retried for idempotent verbs, or for any verb with Retry-After", "[kube][retry]") {
  auto policy = no_jitter();
  const Error unavailable = error_with(Reason::ServiceUnavailable, 503);
  const Error gateway_timeout = error_with(Reason::Timeout, 504);
  CHECK(policy.next_delay(1, "GET", unavailable));
  CHECK(policy.next_delay(1, "PUT", gateway_timeout));
  CHECK(policy.next_delay(1, "DELETE", unavailable));
  CHECK_FALSE(policy.next_delay(1, "POST", unavailable));
  CHECK_FALSE(policy.next_delay(1, "PATCH", gateway_timeout));
  Error asked = unavailable;
  asked.retry_after = 1s;
  CHECK(policy.next_delay(1, "POST", asked));
}

TEST_CASE("connection failures: idempotent verbs, or any verb when nothing was sent", "[kube][retry]") {
  auto policy = no_jitter();
  Error reset = error_with(Reason::Transport, 0);
  CHECK(policy.next_delay(1, "GET", reset));
  CHECK_FALSE(policy.next_delay(1, "POST", reset));
  Error refused = reset;
  refused.request_not_sent = true;
  CHECK(policy.next_delay(1, "POST", refused));
  CHECK(policy.next_delay(1, "PATCH", refused));
}

TEST_CASE("a certificate that failed verification is not retried, whatever the verb", "[kube][retry]") {
  auto policy = no_jitter();
  Error untrusted = error_with(Reason::Transport, 0);
  untrusted.request_not_sent = true;
  untrusted.permanent = true;
  for (const char* method : {"GET", "PUT", "POST", "PATCH", "DELETE"})
    CHECK_FALSE(policy.next_delay(1, method, untrusted));
  untrusted.retry_after = 1s;  // not even when asked to come back
  CHECK_FALSE(policy.next_delay(1, "GET", untrusted));
}

TEST_CASE("answers that retrying cannot fix are not retried", "[kube][retry]") {
  auto policy = no_jitter();
  for (auto reason :
       {Reason::NotFound, Reason::Conflict, Reason::Invalid, Reason::Forbidden, Reason::Unauthorized,
        Reason::Gone, Reason::BadRequest, Reason::AlreadyExists, Reason::Cancelled}) {
    CHECK_FALSE(policy.next_delay(1, "GET", error_with(reason, 400)));
  }
  // Our own deadline ran out: no HTTP code. Retrying would only overrun it further.
  CHECK_FALSE(policy.next_delay(1, "GET", error_with(Reason::Timeout, 0)));
  // 500 only with Retry-After, and only idempotent.
  Error internal = error_with(Reason::InternalError, 500);
  CHECK_FALSE(policy.next_delay(1, "GET", internal));
  internal.retry_after = 1s;
  CHECK(policy.next_delay(1, "GET", internal));
  CHECK_FALSE(policy.next_delay(1, "POST", internal));
}
