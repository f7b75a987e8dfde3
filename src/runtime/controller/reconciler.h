#pragma once
// The contract between the controller and the domain. Level-triggered: the reconciler is told
// which object to look at, never what happened; it reads the cache and converges.
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "runtime/clock.h"
#include "runtime/queue/object_key.h"
#include "runtime/queue/priority.h"

namespace myop::runtime {

struct ReconcileRequest {
  ObjectKey key;
  // Random id carried in every log line of this reconcile.
  std::string reconcile_id;
  Priority priority = Priority::normal;
  // Consecutive failed attempts before this one.
  int failures = 0;
  // Requested when the reconcile deadline passes or shutdown's grace period ends. Pass it to every
  // client call so a hung request cannot hold a worker forever.
  std::stop_token stop;
  TimePoint deadline{};
};

class ReconcileResult {
 public:
  enum class Kind {
    done,            // converged; backoff resets
    waiting,         // not converged, but an event of a watched object brings the next reconcile (a
                     // child being deleted, say): nothing is requeued, backoff resets. Unlike done,
                     // it does not end a finalizer's cleanup.
    requeue,         // not converged, try again soon (counts toward backoff, like a failure)
    requeue_after,   // check again after `delay` (backoff resets)
    error,           // failed; retried with per-key exponential backoff
    terminal_error,  // failed in a way a retry cannot fix (e.g. invalid spec); not retried
  };

  static ReconcileResult done() { return ReconcileResult(Kind::done); }
  static ReconcileResult waiting() { return ReconcileResult(Kind::waiting); }
  static ReconcileResult requeue(std::optional<Priority> priority = std::nullopt) {
    ReconcileResult result(Kind::requeue);
    result.priority_ = priority;
    return result;
  }
  static ReconcileResult requeue_after(Duration delay, std::optional<Priority> priority = std::nullopt) {
    ReconcileResult result(Kind::requeue_after);
    result.delay_ = delay;
    result.priority_ = priority;
    return result;
  }
  static ReconcileResult error(std::string message) {
    ReconcileResult result(Kind::error);
    result.message_ = std::move(message);
    return result;
  }
  // An API error, kept typed up to the controller: a 409 Conflict (the cache was behind the server)
  // is requeued without counting as a failure; anything else is retried with backoff. `context`
  // says what the reconciler was doing ("applying Deployment web").
  static ReconcileResult error(kube::Error error, std::string_view context) {
    ReconcileResult result(Kind::error);
    result.message_ = std::string(context) + ": " + error.to_string();
    result.api_error_ = std::move(error);
    return result;
  }
  static ReconcileResult terminal_error(std::string message) {
    ReconcileResult result(Kind::terminal_error);
    result.message_ = std::move(message);
    return result;
  }

  Kind kind() const { return kind_; }
  bool is_error() const { return kind_ == Kind::error || kind_ == Kind::terminal_error; }
  Duration delay() const { return delay_; }
  const std::optional<Priority>& priority() const { return priority_; }
  const std::string& message() const { return message_; }
  // The API server's error behind an error result, when there was one.
  const std::optional<kube::Error>& api_error() const { return api_error_; }
  bool is_conflict() const { return api_error_ && kube::is_conflict(*api_error_); }

 private:
  explicit ReconcileResult(Kind kind) : kind_(kind) {}
  Kind kind_;
  Duration delay_ = Duration::zero();
  std::optional<Priority> priority_;
  std::string message_;
  std::optional<kube::Error> api_error_;
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // May throw; the controller turns an exception into an error result and retries.
  virtual ReconcileResult reconcile(const ReconcileRequest& request) = 0;
};

}  // namespace myop::runtime
