#include "runtime/controller/reconcile_outcome.h"

namespace myop::runtime {

ReconcileOutcome reconcile_outcome(const ReconcileResult& result, int failures,
                                   base::Duration conflict_requeue_delay) {
  ReconcileOutcome outcome;
  outcome.failures_after = failures;
  switch (result.kind()) {
    case ReconcileResult::Kind::done:
    case ReconcileResult::Kind::waiting:  // as controller-runtime's empty Result: the watch brings more
      outcome.label = "success";
      outcome.completion = Completion::success();
      outcome.event_handled = true;
      return outcome;
    case ReconcileResult::Kind::requeue:
      outcome.label = "requeue";
      outcome.completion = Completion::retry();
      outcome.completion.priority = result.priority();
      outcome.event_kept = true;
      return outcome;
    case ReconcileResult::Kind::requeue_after:
      outcome.label = "requeue_after";
      outcome.completion = Completion::after(result.delay(), result.priority());
      outcome.event_handled = true;
      return outcome;
    case ReconcileResult::Kind::error:
      outcome.logged = true;
      outcome.event_kept = true;
      if (result.is_conflict()) {
        // The cache was behind the server (someone wrote in between): the watch is bringing the newer
        // object, so look again shortly without moving the key up the backoff schedule.
        outcome.label = "requeue";
        outcome.completion = Completion::after(conflict_requeue_delay);
        outcome.log_level = spdlog::level::debug;
        outcome.log_message = "Conflict, requeueing";
        return outcome;
      }
      outcome.label = "error";
      // An API server that said when to come back (429 with Retry-After) is not asked sooner.
      outcome.completion = Completion::retry(result.api_error() && result.api_error()->retry_after
                                                 ? base::Duration(*result.api_error()->retry_after)
                                                 : base::Duration::zero());
      outcome.error = true;
      outcome.failures_after = failures + 1;
      outcome.log_level = spdlog::level::err;
      outcome.log_message = "Reconciler error";
      outcome.span_error = true;
      return outcome;
    case ReconcileResult::Kind::terminal_error:
      outcome.label = "error";
      outcome.completion = Completion::success();  // a retry cannot help; the next change will trigger again
      outcome.error = true;
      outcome.terminal = true;
      outcome.logged = true;
      outcome.log_level = spdlog::level::err;
      outcome.log_message = "Reconciler terminal error, not retrying";
      outcome.span_error = true;
      return outcome;
  }
  return outcome;
}

}  // namespace myop::runtime
