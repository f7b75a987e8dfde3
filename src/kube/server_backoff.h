// The wait an API server asked of this client with 429 + Retry-After (API Priority and Fairness shed
// a request of ours), kept for the whole client rather than for the one request that was told.
//
// Without it, a Retry-After longer than what is left of a request's deadline is lost: the request
// gives up at once, its caller tries again within milliseconds, and every other thread of the client
// finds the same 429 for itself. With it, until the asked-for time has passed, the transport holds
// every request that honours it (all but Lease requests, whose renewals keep the leadership), and
// fails at once, unsent, with TooManyRequests and the remaining wait a request whose deadline comes
// first, so that its caller requeues after the wait. Pure logic on a base::Clock, unit-tested.
//
// A request is held once, before it is first sent: a retry already waits for its own 429's
// Retry-After, so it takes the larger of that and what is left when it is scheduled, and is not held
// again after its sleep (re-reading the end then, which every new 429 moves, would make all the
// client's retries chase the latest 429 and go together, a herd that only meets 429s again). The held
// requests go at the end plus a jitter of up to `jitter` of the asked-for wait, so that they spread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/clock.h"

namespace myop::kube {

// True for the requests the wait holds: all but those of coordination.k8s.io (Leases).
bool holds_for_server_backoff(std::string_view path);

class ServerBackoff {
 public:
  ServerBackoff(std::shared_ptr<const base::Clock> clock, double jitter);

  // The server asked for `wait` from now; a later end than the current one extends it, an earlier one
  // changes nothing.
  void asked_to_wait(base::Duration wait);

  // What is left of the wait; zero once it has passed.
  base::Duration remaining() const;

  // How long a request not yet sent waits: zero when no wait is in force, else what is left plus
  // `random_unit` (in [0, 1)) times the jitter share of the asked-for wait.
  base::Duration hold(double random_unit) const;

 private:
  std::shared_ptr<const base::Clock> clock_;
  mutable std::mutex mutex_;
  base::TimePoint until_{};
  base::Duration spread_{};  // jitter times the wait that set until_
  const double jitter_;
};

}  // namespace myop::kube
