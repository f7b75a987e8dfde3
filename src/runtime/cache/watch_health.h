#pragma once
// Whether an informer can still follow its kind: what /readyz says of a cache that synced once and
// whose list or watch no longer works (an API server that keeps refusing them, e.g. while the CRD's
// conversion webhook is down: "conversion webhook for myorg.io/v1beta1, Kind=MyResource failed").
//
// The rule: failing once two attempts in a row, to list or to (re)open the watch, have failed with
// no progress between them; healthy again at the next progress (an initial state completed, or a
// watch delivered an event or a bookmark). A 410 Gone is not counted (it asks for the relist that
// follows, the routine way to catch up), nor is a watch that ends at its timeoutSeconds (the watcher
// does not report it as a failure). So one broken watch that comes back, one stall, or one relist
// after a 410 that succeeds never makes an informer fail; a watch that cannot be reopened, or a
// relist that keeps failing, does within one backoff wait (0.8 s, doubling to 30 s).
//
// Pure and not thread-safe: the informer guards it.
#include <string>

#include "base/result.h"
#include "kube/errors.h"
#include "runtime/clock.h"

namespace myop::runtime {

class WatchHealth {
 public:
  // Failures in a row (410 Gone aside) that make an informer failing.
  static constexpr int kFailuresInARow = 2;

  // A failure the watcher reported (it retries after a wait). True when it made the informer failing.
  bool failed(const kube::Error& error, TimePoint now);
  // Progress: an initial state completed, or a watch delivered an event or a bookmark. True when the
  // informer was failing (it recovered).
  bool progressed();

  bool failing() const { return failing_; }
  // Failures since the last progress (410 Gone aside).
  int failures() const { return failures_; }
  // The first of them (meaningful while failures() > 0).
  TimePoint first_failure() const { return first_failure_; }
  // The last error reported, as Error::to_string() put it ("" before the first).
  const std::string& last_error() const { return last_error_; }
  // Fails while failing() with "3 attempts in a row failed over 12 s; the last: <error>"; passes
  // otherwise.
  base::Result<void, std::string> health(TimePoint now) const;

 private:
  bool failing_ = false;
  int failures_ = 0;
  TimePoint first_failure_{};
  std::string last_error_;
};

}  // namespace myop::runtime
