#pragma once
// Assembles a controller on a manager in a few lines, as controller-runtime's builder and kube-rs's
// Controller::new().owns() do:
//
//   ControllerBuilder(manager, "myresource")
//       .for_kind(myresource_type(), {myresource_changed})
//       .owns(kube::resources::deployments(), {.label_selector = "app.kubernetes.io/managed-by=x"})
//       .watches(kube::resources::config_maps(), map_flags_to_all, {.field_selector = "metadata.name=f"})
//       .max_concurrent_reconciles(4)
//       .complete(reconciler);
//
// The reconciler reads the caches the builder watches: cache(kind) hands out a CacheReader of each
// kind given to for_kind(), owns() or watches(), in the scope the controller watches it, so the
// reconciler and the event handlers share one cache and nobody repeats the scope rules:
//
//   ControllerBuilder builder(manager, "namespace-labeller");
//   builder.for_kind(namespaces()).watches(myresources(), to_namespace);
//   builder.complete(std::make_shared<Labeller>(builder.cache(namespaces()), builder.cache(myresources())));
//
// Each watched kind comes from the manager's informer registry, so controllers that watch the same
// kind in the same scope share one cache and one watch. Events become keys through a mapper and
// predicates, at a priority per event type: the initial list and periodic resyncs are always low.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/resource.h"
#include "runtime/cache/cache_reader.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/cache/informer_set.h"
#include "runtime/controller/cluster_reconcilers.h"
#include "runtime/controller/controller.h"
#include "runtime/controller/event_handler.h"
#include "runtime/controller/predicate.h"
#include "runtime/controller/reconciler.h"
#include "runtime/fleet/cluster_context.h"
#include "runtime/manager/manager.h"

namespace myop::runtime {

// The priority of a live event by its type (initial list and resync are always low).
struct EventPriorities {
  Priority added = Priority::high;
  Priority updated = Priority::high;
  Priority deleted = Priority::high;
};

struct WatchOptions {
  // Empty: the manager's namespaces. Ignored for cluster-scoped kinds.
  std::optional<std::vector<std::string>> namespaces;
  std::string label_selector;
  std::string field_selector;
  std::vector<Predicate> predicates;
  // Overrides the mapper's own priorities for live events.
  std::optional<EventPriorities> priorities;
  // Watched in the hub only, not in the fleet's members (e.g. the operator's own configuration).
  bool hub_only = false;
};

struct OwnsOptions {
  std::optional<std::vector<std::string>> namespaces;
  std::string label_selector;
  std::vector<Predicate> predicates;
  // A child's changes matter less than its owner's; its deletion must be undone promptly.
  EventPriorities priorities{Priority::normal, Priority::normal, Priority::high};
  // For a child without any controller owner: the primary object that would adopt it (nullopt:
  // none). Adoption itself is the reconciler's decision; this only tells it to look.
  std::function<std::optional<ObjectKey>(const kube::Object& child)> adopted_by;
};

// Re-prioritises a mapper's live events by type.
EventMapper with_priorities(EventMapper mapper, EventPriorities priorities);

// The caches of one cluster (the hub's or a member's, runtime/fleet/cluster_context.h) in the scopes a
// builder watches them in: what a reconciler of that cluster reads, next to the cluster's writer.
class ClusterCaches {
 public:
  ClusterCaches(ClusterContext cluster, std::vector<std::pair<kube::ResourceType, InformerScope>> scopes)
      : cluster_(std::move(cluster)), scopes_(std::move(scopes)) {}
  const ClusterContext& cluster() const { return cluster_; }
  // As ControllerBuilder::cache(), in this cluster.
  CacheReader cache(const kube::ResourceType& type) const;

 private:
  ClusterContext cluster_;
  std::vector<std::pair<kube::ResourceType, InformerScope>> scopes_;
};

using ReconcilerFactory = std::function<std::shared_ptr<Reconciler>(const ClusterCaches& caches)>;

class ControllerBuilder {
 public:
  ControllerBuilder(Manager& manager, std::string name);

  // The primary kind: each event enqueues the object itself.
  ControllerBuilder& for_kind(const kube::ResourceType& type, std::vector<Predicate> predicates = {},
                              WatchOptions options = {});
  // Objects whose controller owner reference names the primary kind enqueue that owner.
  ControllerBuilder& owns(const kube::ResourceType& type, OwnsOptions options = {});
  // Any kind, mapped to primary keys by `mapper`.
  ControllerBuilder& watches(const kube::ResourceType& type, EventMapper mapper, WatchOptions options = {});
  ControllerBuilder& max_concurrent_reconciles(int workers);
  ControllerBuilder& reconcile_timeout(Duration timeout);

  // The cache of `type`, a kind given to for_kind(), owns() or watches() before (the first one given,
  // when the same kind is watched twice), from the manager's registry: the cache complete()
  // subscribes the controller to. Throws std::logic_error for a kind this builder does not watch.
  CacheReader cache(const kube::ResourceType& type) const;

  // Every key of the primary kind (given to for_kind() before) in every cluster this builder's
  // controller works on at the time of the call: the hub's cache, and each engaged member's (their keys
  // carry their cluster). For the mapper of a hub_only watch whose change concerns every object (an
  // operator-wide setting such as a flag ConfigMap), so that members hear of it too.
  std::function<std::vector<ObjectKey>()> primary_keys_everywhere() const;

  // Builds the controller, subscribes it to its informers and hands it to the manager. The hub only.
  std::shared_ptr<Controller> complete(std::shared_ptr<Reconciler> reconciler);
  // The same, with a reconciler per cluster: `make` is called for the hub now and, when the manager has
  // a fleet, for each member it engages, with that cluster's caches; the controller watches every
  // member's kinds but the hub_only ones. A member's keys are reconciled once its caches have synced
  // (then each of its primary objects is enqueued at low priority) and until it is disengaged
  // (runtime/controller/cluster_reconcilers.h).
  std::shared_ptr<Controller> complete(const ReconcilerFactory& make);

 private:
  // The engaged members' primary caches, with the shard slot of each (complete(ReconcilerFactory)
  // keeps it; a sharded slot that opens brings its members' objects to the queue).
  struct MemberCaches {
    std::mutex mutex;
    std::map<ClusterId, std::pair<int, CacheReader>> by_id;
  };
  struct Watch {
    kube::ResourceType type;
    InformerScope scope;
    EventMapper mapper;
    std::vector<Predicate> predicates;
    std::optional<InformerSet::WatchedAs> role;  // for_kind() and owns(); none for watches()
    bool hub_only = false;
  };

  // Subscribes `controller` to the watches in the hub's registry.
  void subscribe_hub(Controller& controller);
  // complete(ReconcilerFactory)'s part for the fleet's members: their watches, reconcilers, and the
  // keys they bring when their caches sync (or, sharded, when their slot opens here).
  void engage_members(const std::shared_ptr<Controller>& controller,
                      const std::shared_ptr<ClusterReconcilers>& reconcilers, const ReconcilerFactory& make);
  // Each watch's kind and scope, for ClusterCaches (`members`: as a member caches them, unsharded).
  std::vector<std::pair<kube::ResourceType, InformerScope>> scopes(bool members) const;

  // `shardable`: the primary and owned kinds, cached per shard slot when the manager shards (and the
  // kind is namespaced and watched in every namespace).
  InformerScope scope_of(const kube::ResourceType& type,
                         const std::optional<std::vector<std::string>>& namespaces,
                         std::string label_selector, std::string field_selector, bool shardable) const;

  Manager& manager_;
  ControllerOptions options_;
  std::optional<kube::ResourceType> primary_;
  std::vector<Watch> watches_;
  std::shared_ptr<MemberCaches> member_caches_ = std::make_shared<MemberCaches>();
};

}  // namespace myop::runtime
