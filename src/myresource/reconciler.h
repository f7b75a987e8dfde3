// The MyResource reconciler: level-triggered and idempotent. Each call reads the MyResource and its
// Deployments from the caches and converges, writing only what differs:
//
//   1. Gone from the cache: nothing to do (owner references let the garbage collector take the rest).
//   2. The finalizer protocol of runtime/controller/finalizer.h: the finalizer is added before anything else
//      (never while being deleted); on deletion, the children are deleted (foreground, UID
//      precondition) and waited for, then the finalizer is dropped. Failures: Degraded/CleanupFailed,
//      a Warning event, retry with backoff. `kubectl delete --cascade=orphan` keeps the children.
//      A child whose foreground deletion outlasts its pods' grace period plus `stuck_deletion_timeout`
//      (the garbage collector missed it) is deleted again in background, with a Warning event
//      ForegroundDeletionStuck: a removal never waits forever on a lost garbage-collector event.
//   3. API errors stay typed (kube::Error) up to the controller: a 409 is requeued, not a failure.
//   4. Invalid spec (got past the API server): Degraded/InvalidSpec, a Warning event, no retry (the
//      next spec change brings the next reconcile). Paused: status only.
//   5. Stable Deployment: apply when the spec hash or any field we own differs (hand edits too).
//   6. Canary: decide_canary, then apply, scale away or delete (as a child in 2: never stuck).
//   7. Status: computed, written only when it differs; events when a condition changes. While the
//      Deployment controller has not yet observed the stable Deployment's latest spec, its replica
//      counts are about to change: a status built from them would be superseded by the very next
//      Deployment event, so the write waits for that event (bounded by `stale_deployment_wait`).
//
// A steady cluster causes zero writes: every write is guarded by a comparison with the cache.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "myresource/cluster.h"
#include "myresource/conditions.h"
#include "runtime/controller/reconciler.h"

namespace myop::myresource {

struct ReconcilerOptions {
  // Wall time for condition times and canary deadlines; tests pass a fake clock.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Longest time a status write waits for the Deployment controller to observe the stable
  // Deployment's new spec; after it, the status is written from what the Deployment says.
  runtime::Duration stale_deployment_wait = std::chrono::seconds(10);
  // How much longer than its pods' termination grace period a child Deployment may stay in foreground
  // deletion before it is deleted again in background (foreground_deletion_time_left).
  std::chrono::milliseconds stuck_deletion_timeout = std::chrono::seconds(60);
};

// Since when each MyResource has been waiting for its stable Deployment's controller (by the
// Deployment's UID and generation), so the wait is bounded. Thread-safe: workers share it.
class StaleDeploymentWaits {
 public:
  // How much longer to wait for `uid`/`generation` of the Deployment of `key`, or nullopt: write now.
  std::optional<runtime::Duration> remaining(const std::string& key, const std::string& uid,
                                             std::int64_t generation, WallTime now, runtime::Duration limit);
  void forget(const std::string& key);
  std::size_t size() const;

 private:
  struct Wait {
    std::string uid;
    std::int64_t generation = 0;
    WallTime since;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Wait> waits_;
};

class MyResourceReconciler final : public runtime::Reconciler {
 public:
  MyResourceReconciler(std::shared_ptr<Cluster> cluster, ReconcilerOptions options = {});

  runtime::ReconcileResult reconcile(const runtime::ReconcileRequest& request) override;

 private:
  std::shared_ptr<Cluster> cluster_;
  ReconcilerOptions options_;
  StaleDeploymentWaits stale_waits_;
};

}  // namespace myop::myresource
