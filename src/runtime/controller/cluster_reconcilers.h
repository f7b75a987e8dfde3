// A controller's reconcilers, one per cluster (the hub's and each engaged member's), behind the one
// Reconciler the controller calls: a request goes to the reconciler of its key's cluster. A cluster not
// engaged (any more), or a member whose caches have not synced yet, gets nothing done: its keys are
// dropped, since the member's synced caches are enqueued in full when it becomes ready
// (runtime/controller/builder.h), and a disengaged member's work is over. A member marked unready (its
// API server not answering, runtime/fleet/fleet.h) has its keys put back for `unready_retry` at their
// priority, without a reconcile: no worker waits on a cluster known to be down.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "runtime/controller/reconciler.h"

namespace myop::runtime {

class ClusterReconcilers final : public Reconciler {
 public:
  explicit ClusterReconcilers(Duration unready_retry = std::chrono::seconds(5))
      : unready_retry_(unready_retry) {}

  // `keep_alive` is held as long as the reconciler is (what it writes through, for a member). A member
  // starts not ready.
  void add(ClusterId cluster, std::shared_ptr<Reconciler> reconciler, std::shared_ptr<const void> keep_alive,
           bool ready);
  void set_ready(ClusterId cluster);
  // A member's health (true at first).
  void set_healthy(ClusterId cluster, bool healthy);
  // A reconcile of the cluster still running keeps its reconciler until it returns.
  void remove(ClusterId cluster);
  bool has(ClusterId cluster) const;
  // Whether the cluster's caches have synced (set_ready): before that its events need not be queued,
  // since all of its objects are once it is.
  bool ready(ClusterId cluster) const;

  ReconcileResult reconcile(const ReconcileRequest& request) override;

 private:
  struct Entry {
    std::shared_ptr<Reconciler> reconciler;
    std::shared_ptr<const void> keep_alive;
    bool ready = false;
    bool healthy = true;
  };
  Duration unready_retry_;
  mutable std::mutex mutex_;
  std::map<ClusterId, std::shared_ptr<const Entry>> entries_;
};

}  // namespace myop::runtime
