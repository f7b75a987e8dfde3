#include "runtime/controller/cluster_reconcilers.h"

#include <utility>

namespace myop::runtime {

void ClusterReconcilers::add(ClusterId cluster, std::shared_ptr<Reconciler> reconciler,
                             std::shared_ptr<const void> keep_alive, bool ready) {
  std::lock_guard lock(mutex_);
  entries_[cluster] =
      std::make_shared<const Entry>(Entry{std::move(reconciler), std::move(keep_alive), ready});
}

void ClusterReconcilers::set_ready(ClusterId cluster) {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(cluster);
  if (position == entries_.end() || position->second->ready) return;
  Entry ready = *position->second;
  ready.ready = true;
  position->second = std::make_shared<const Entry>(std::move(ready));
}

void ClusterReconcilers::set_healthy(ClusterId cluster, bool healthy) {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(cluster);
  if (position == entries_.end() || position->second->healthy == healthy) return;
  Entry changed = *position->second;
  changed.healthy = healthy;
  position->second = std::make_shared<const Entry>(std::move(changed));
}

void ClusterReconcilers::remove(ClusterId cluster) {
  std::shared_ptr<const Entry> removed;  // released outside the lock
  std::lock_guard lock(mutex_);
  auto position = entries_.find(cluster);
  if (position == entries_.end()) return;
  removed = std::move(position->second);
  entries_.erase(position);
}

bool ClusterReconcilers::has(ClusterId cluster) const {
  std::lock_guard lock(mutex_);
  return entries_.contains(cluster);
}

bool ClusterReconcilers::ready(ClusterId cluster) const {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(cluster);
  return position != entries_.end() && position->second->ready;
}

ReconcileResult ClusterReconcilers::reconcile(const ReconcileRequest& request) {
  std::shared_ptr<const Entry> entry;
  {
    std::lock_guard lock(mutex_);
    auto position = entries_.find(request.key.cluster);
    if (position != entries_.end()) entry = position->second;
  }
  if (!entry || !entry->ready) return ReconcileResult::done();
  if (!entry->healthy) return ReconcileResult::requeue_after(unready_retry_, request.priority);
  return entry->reconciler->reconcile(request);
}

}  // namespace myop::runtime
