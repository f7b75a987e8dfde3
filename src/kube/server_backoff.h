// The wait an API server asked of this client with 429 + Retry-After (API Priority and Fairness shed
// a request of ours), kept for the whole client rather than for the one request that was told.
//
// Without it, a Retry-After longer than what is left of a request's deadline is lost: the request
// gives up at once, its caller tries again within milliseconds, and every other thread of the client
// finds the same 429 for itself. With it, until the asked-for time has passed, the transport holds
// every request that honours it (all but Lease requests, whose renewals keep the leadership), and
// fails at once, unsent, with TooManyRequests and the remaining wait a request whose deadline comes
// first, so that its caller requeues after the wait. Pure logic on a base::Clock, unit-tested.
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
  explicit ServerBackoff(std::shared_ptr<const base::Clock> clock);

  // The server asked for `wait` from now; a later end than the current one extends it, an earlier one
  // changes nothing.
  void asked_to_wait(base::Duration wait);

  // What is left of the wait; zero once it has passed.
  base::Duration remaining() const;

 private:
  std::shared_ptr<const base::Clock> clock_;
  mutable std::mutex mutex_;
  base::TimePoint until_{};
};

}  // namespace myop::kube
