// ClusterReconcilers (runtime/controller/cluster_reconcilers.h): a request goes to its cluster's
// reconciler; a member not ready yet, or gone, gets nothing done; a reconcile in flight keeps what its
// cluster's reconciler needs alive after the cluster is removed.
#include "runtime/controller/cluster_reconcilers.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace myop::runtime;

namespace {

class Named final : public Reconciler {
 public:
  explicit Named(std::string name, std::vector<std::string>& seen) : name_(std::move(name)), seen_(seen) {}
  ReconcileResult reconcile(const ReconcileRequest& request) override {
    seen_.push_back(name_ + " " + request.key.to_string());
    return ReconcileResult::requeue_after(std::chrono::seconds(1));
  }

 private:
  std::string name_;
  std::vector<std::string>& seen_;
};

ReconcileRequest request_for(ObjectKey key) {
  ReconcileRequest request;
  request.key = std::move(key);
  return request;
}

}  // namespace

TEST_CASE("each key goes to its cluster's reconciler, once that cluster is ready",
          "[runtime][controller][fleet]") {
  std::vector<std::string> seen;
  ClusterReconcilers reconcilers;
  reconcilers.add(kLocalCluster, std::make_shared<Named>("hub", seen), nullptr, true);
  reconcilers.add(3, std::make_shared<Named>("member", seen), nullptr, false);

  CHECK(reconcilers.reconcile(request_for({"t", "web"})).kind() == ReconcileResult::Kind::requeue_after);
  // A member whose caches are not synced yet: nothing done (its keys are enqueued again when it is).
  CHECK(reconcilers.reconcile(request_for({"t", "web", 3})).kind() == ReconcileResult::Kind::done);
  reconcilers.set_ready(3);
  CHECK(reconcilers.reconcile(request_for({"t", "web", 3})).kind() == ReconcileResult::Kind::requeue_after);
  // A cluster nobody engaged.
  CHECK(reconcilers.reconcile(request_for({"t", "web", 9})).kind() == ReconcileResult::Kind::done);
  CHECK(seen == std::vector<std::string>{"hub t/web", "member #3:t/web"});

  // Marked unready (its API server does not answer): put back for later at its priority, not reconciled.
  reconcilers.set_healthy(3, false);
  ReconcileRequest high = request_for({"t", "web", 3});
  high.priority = Priority::high;
  const ReconcileResult later = reconcilers.reconcile(high);
  CHECK(later.kind() == ReconcileResult::Kind::requeue_after);
  CHECK(later.delay() == std::chrono::seconds(5));
  CHECK(later.priority() == Priority::high);
  CHECK(seen.size() == 2);
  reconcilers.set_healthy(3, true);
  reconcilers.reconcile(request_for({"t", "web", 3}));
  CHECK(seen.size() == 3);

  reconcilers.remove(3);
  CHECK_FALSE(reconcilers.has(3));
  CHECK(reconcilers.reconcile(request_for({"t", "web", 3})).kind() == ReconcileResult::Kind::done);
  CHECK(seen.size() == 3);
}

TEST_CASE("a cluster removed during its reconcile keeps what it writes through until the reconcile ends",
          "[runtime][controller][fleet]") {
  ClusterReconcilers reconcilers;
  auto kept = std::make_shared<int>(42);
  const std::weak_ptr<int> watched = kept;
  // Disengaged while one of its reconciles runs: the writer it uses must outlive that reconcile.
  class Removing final : public Reconciler {
   public:
    Removing(ClusterReconcilers& reconcilers, std::weak_ptr<int> watched)
        : reconcilers_(reconcilers), watched_(std::move(watched)) {}
    ReconcileResult reconcile(const ReconcileRequest& request) override {
      reconcilers_.remove(request.key.cluster);
      alive_after_remove = !watched_.expired();
      return ReconcileResult::done();
    }
    bool alive_after_remove = false;

   private:
    ClusterReconcilers& reconcilers_;
    std::weak_ptr<int> watched_;
  };
  auto removing = std::make_shared<Removing>(reconcilers, watched);
  reconcilers.add(5, removing, std::move(kept), true);
  reconcilers.reconcile(request_for({"t", "web", 5}));
  CHECK(removing->alive_after_remove);
  CHECK_FALSE(reconcilers.has(5));
  CHECK(watched.expired());
}
