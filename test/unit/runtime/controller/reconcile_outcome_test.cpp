#include "runtime/controller/reconcile_outcome.h"

#include <catch2/catch.hpp>

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;

namespace {

const base::Duration kConflictDelay = 100ms;

ReconcileOutcome outcome_of(const ReconcileResult& result, int failures = 2) {
  return reconcile_outcome(result, failures, kConflictDelay);
}

}  // namespace

TEST_CASE("reconcile outcome: done and waiting forget the key and handle the event",
          "[runtime][controller]") {
  for (const auto& result : {ReconcileResult::done(), ReconcileResult::waiting()}) {
    const ReconcileOutcome outcome = outcome_of(result);
    CHECK(outcome.label == "success");
    CHECK(outcome.completion.kind == Completion::Kind::forget);
    CHECK(outcome.event_handled);
    CHECK_FALSE(outcome.event_kept);
    CHECK_FALSE(outcome.error);
    CHECK_FALSE(outcome.logged);
    CHECK_FALSE(outcome.span_error);
  }
}

TEST_CASE("reconcile outcome: requeue retries with backoff at its priority and keeps the event",
          "[runtime][controller]") {
  const ReconcileOutcome outcome = outcome_of(ReconcileResult::requeue(Priority::low));
  CHECK(outcome.label == "requeue");
  CHECK(outcome.completion.kind == Completion::Kind::retry);
  CHECK(outcome.completion.priority == Priority::low);
  CHECK(outcome.event_kept);
  CHECK_FALSE(outcome.event_handled);
  CHECK_FALSE(outcome.error);
}

TEST_CASE("reconcile outcome: requeue_after resets the backoff and handles the event",
          "[runtime][controller]") {
  const ReconcileOutcome outcome = outcome_of(ReconcileResult::requeue_after(30s, Priority::normal));
  CHECK(outcome.label == "requeue_after");
  CHECK(outcome.completion.kind == Completion::Kind::requeue_after);
  CHECK(outcome.completion.delay == 30s);
  CHECK(outcome.completion.priority == Priority::normal);
  CHECK(outcome.event_handled);
  CHECK_FALSE(outcome.error);
}

TEST_CASE("reconcile outcome: an error is counted, logged, retried and keeps the event",
          "[runtime][controller]") {
  const ReconcileOutcome outcome = outcome_of(ReconcileResult::error("boom"), 2);
  CHECK(outcome.label == "error");
  CHECK(outcome.completion.kind == Completion::Kind::retry);
  CHECK(outcome.completion.delay == base::Duration::zero());
  CHECK(outcome.error);
  CHECK_FALSE(outcome.terminal);
  CHECK(outcome.event_kept);
  CHECK(outcome.logged);
  CHECK(outcome.log_level == spdlog::level::err);
  CHECK(outcome.failures_after == 3);
  CHECK(outcome.span_error);
}

TEST_CASE("reconcile outcome: a 429's Retry-After is the least wait of the retry", "[runtime][controller]") {
  kube::Error throttled = kube::make_error(kube::Reason::TooManyRequests, "slow down", 429);
  throttled.retry_after = std::chrono::seconds(7);
  const ReconcileOutcome outcome = outcome_of(ReconcileResult::error(throttled, "applying"));
  CHECK(outcome.completion.kind == Completion::Kind::retry);
  CHECK(outcome.completion.delay == 7s);
}

TEST_CASE("reconcile outcome: a conflict comes back shortly, uncounted, without backoff",
          "[runtime][controller]") {
  const ReconcileOutcome outcome = outcome_of(
      ReconcileResult::error(kube::make_error(kube::Reason::Conflict, "stale", 409), "writing"), 2);
  CHECK(outcome.label == "requeue");
  CHECK(outcome.completion.kind == Completion::Kind::requeue_after);
  CHECK(outcome.completion.delay == kConflictDelay);
  CHECK_FALSE(outcome.error);
  CHECK(outcome.event_kept);
  CHECK(outcome.logged);
  CHECK(outcome.log_level == spdlog::level::debug);
  CHECK(outcome.failures_after == 2);
  CHECK_FALSE(outcome.span_error);
}

TEST_CASE("reconcile outcome: a terminal error is counted twice, forgotten, and drops the event",
          "[runtime][controller]") {
  const ReconcileOutcome outcome = outcome_of(ReconcileResult::terminal_error("invalid spec"), 2);
  CHECK(outcome.label == "error");
  CHECK(outcome.completion.kind == Completion::Kind::forget);
  CHECK(outcome.error);
  CHECK(outcome.terminal);
  CHECK_FALSE(outcome.event_handled);
  CHECK_FALSE(outcome.event_kept);
  CHECK(outcome.logged);
  CHECK(outcome.failures_after == 2);
  CHECK(outcome.span_error);
}
