#pragma once
// What a controller does with a reconcile's result, as one pure function of the result: the work
// queue's completion, the `result` label of controller_runtime_reconcile_total, which error counters
// move, whether the triggering event counts as handled (its end-to-end latency is observed now) or
// keeps counting through the retry, and how the result is logged. Controller::process applies it;
// the rules live here, where a unit test can read them all.
#include <spdlog/common.h>

#include <string_view>

#include "base/clock.h"
#include "runtime/controller/reconciler.h"
#include "runtime/queue/workqueue.h"

namespace myop::runtime {

struct ReconcileOutcome {
  Completion completion;
  std::string_view label;  // "success", "requeue", "requeue_after", "error"
  // Counted in controller_runtime_reconcile_errors_total (and, terminal, in
  // controller_runtime_terminal_reconcile_errors_total).
  bool error = false;
  bool terminal = false;
  // The triggering event was dealt with: observe its latency. Otherwise (a retry) it keeps counting,
  // except after a terminal error, where nothing will retry it.
  bool event_handled = false;
  bool event_kept = false;
  // How the result is logged: nothing for a success, debug for a conflict, an error otherwise.
  bool logged = false;
  spdlog::level::level_enum log_level = spdlog::level::debug;
  std::string_view log_message;
  // The item's failure count as logged (a conflict or terminal error adds none).
  int failures_after = 0;
  // The span's status is an error (a conflict is not one: it is retried at once).
  bool span_error = false;
};

// `failures`: the item's failures before this reconcile. `conflict_requeue_delay`: how soon a 409
// Conflict (the cache was behind the server) is looked at again, without backoff.
ReconcileOutcome reconcile_outcome(const ReconcileResult& result, int failures,
                                   base::Duration conflict_requeue_delay);

}  // namespace myop::runtime
