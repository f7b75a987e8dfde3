#include "runtime/controller/builder.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "runtime/controller/cluster_reconcilers.h"
#include "runtime/fleet/fleet.h"

namespace myop::runtime {

EventMapper with_priorities(EventMapper mapper, EventPriorities priorities) {
  return [mapper = std::move(mapper), priorities](const ObjectEvent& event) {
    std::vector<EnqueueRequest> requests = mapper(event);
    if (event.initial_list || event.type == EventType::resync) {
      for (auto& request : requests) request.priority = Priority::low;
      return requests;
    }
    const Priority priority = event.type == EventType::added     ? priorities.added
                              : event.type == EventType::deleted ? priorities.deleted
                                                                 : priorities.updated;
    for (auto& request : requests) request.priority = priority;
    return requests;
  };
}

ControllerBuilder::ControllerBuilder(Manager& manager, std::string name) : manager_(manager) {
  options_.name = std::move(name);
  options_.registry = manager.registry();
  options_.shard_gate = manager.shard_gate();
  options_.tracer = manager.tracer();
}

InformerScope ControllerBuilder::scope_of(const kube::ResourceType& type,
                                          const std::optional<std::vector<std::string>>& namespaces,
                                          std::string label_selector, std::string field_selector,
                                          bool shardable) const {
  InformerScope scope{namespaces.value_or(manager_.namespaces()), std::move(label_selector),
                      std::move(field_selector)};
  scope.sharded = shardable && manager_.shard_gate() && type.namespaced && scope.namespaces.empty();
  return scope;
}

ControllerBuilder& ControllerBuilder::for_kind(const kube::ResourceType& type,
                                               std::vector<Predicate> predicates, WatchOptions options) {
  if (primary_) throw std::logic_error("ControllerBuilder: for_kind() given twice for " + options_.name);
  primary_ = type;
  predicates.insert(predicates.end(), options.predicates.begin(), options.predicates.end());
  watches_.push_back(
      {type, scope_of(type, options.namespaces, options.label_selector, options.field_selector, true),
       with_priorities(enqueue_object(), options.priorities.value_or(EventPriorities{})),
       std::move(predicates), InformerSet::WatchedAs::primary});
  return *this;
}

ControllerBuilder& ControllerBuilder::owns(const kube::ResourceType& type, OwnsOptions options) {
  if (!primary_) throw std::logic_error("ControllerBuilder: owns() before for_kind() for " + options_.name);
  EventMapper owner = enqueue_controller_owner(primary_->group, primary_->kind, primary_->namespaced);
  auto adopted_by = std::move(options.adopted_by);
  EventMapper mapper = [owner = std::move(owner), adopted_by](const ObjectEvent& event) {
    std::vector<EnqueueRequest> requests = owner(event);
    if (requests.empty() && adopted_by && event.object && !event.object->view().controller_owner()) {
      if (auto key = adopted_by(*event.object)) requests.push_back({std::move(*key), Priority::normal});
    }
    return requests;
  };
  watches_.push_back({type, scope_of(type, options.namespaces, std::move(options.label_selector), {}, true),
                      with_priorities(std::move(mapper), options.priorities), std::move(options.predicates),
                      InformerSet::WatchedAs::owned});
  return *this;
}

ControllerBuilder& ControllerBuilder::watches(const kube::ResourceType& type, EventMapper mapper,
                                              WatchOptions options) {
  if (options.priorities) mapper = with_priorities(std::move(mapper), *options.priorities);
  watches_.push_back({type,
                      scope_of(type, options.namespaces, std::move(options.label_selector),
                               std::move(options.field_selector), false),
                      std::move(mapper), std::move(options.predicates), std::nullopt, options.hub_only});
  return *this;
}

ControllerBuilder& ControllerBuilder::max_concurrent_reconciles(int workers) {
  options_.max_concurrent_reconciles = workers;
  return *this;
}

ControllerBuilder& ControllerBuilder::reconcile_timeout(Duration timeout) {
  options_.reconcile_timeout = timeout;
  return *this;
}

CacheReader ControllerBuilder::cache(const kube::ResourceType& type) const {
  for (const Watch& watch : watches_) {
    if (watch.type.group == type.group && watch.type.resource == type.resource)
      return CacheReader(watch.type, manager_.informers().informer(watch.type, watch.scope));
  }
  throw std::logic_error("ControllerBuilder: cache(" + type.qualified_resource() + ") of a kind " +
                         options_.name + " does not watch; give it to for_kind(), owns() or watches() first");
}

CacheReader ClusterCaches::cache(const kube::ResourceType& type) const {
  for (const auto& [watched, scope] : scopes_) {
    if (watched.group == type.group && watched.resource == type.resource)
      return CacheReader(watched, cluster_.informers->informer(watched, scope));
  }
  throw std::logic_error("ClusterCaches: cache(" + type.qualified_resource() + ") of a kind not watched in " +
                         (cluster_.name.empty() ? std::string("the hub") : "member " + cluster_.name));
}

std::vector<std::pair<kube::ResourceType, InformerScope>> ControllerBuilder::scopes(bool members) const {
  std::vector<std::pair<kube::ResourceType, InformerScope>> scopes;
  for (const Watch& watch : watches_) {
    if (members && watch.hub_only) continue;
    InformerScope scope = watch.scope;
    if (members) scope.sharded = false;
    scopes.emplace_back(watch.type, std::move(scope));
  }
  return scopes;
}

void ControllerBuilder::subscribe_hub(Controller& controller) {
  for (const Watch& watch : watches_) {
    // The informer set lives in the registry for the manager's lifetime, which outlives the controller.
    std::shared_ptr<InformerSet> informers = manager_.informers().informer(watch.type, watch.scope);
    if (watch.role) informers->watched_as(*watch.role);
    controller.watch(*informers, watch.mapper, watch.predicates);
  }
}

std::function<std::vector<ObjectKey>()> ControllerBuilder::primary_keys_everywhere() const {
  if (!primary_)
    throw std::logic_error("ControllerBuilder: primary_keys_everywhere() before for_kind() for " +
                           options_.name);
  return [hub = cache(*primary_), members = member_caches_] {
    std::vector<ObjectKey> keys = hub.keys();
    std::lock_guard lock(members->mutex);
    for (const auto& [id, member] : members->by_id) {
      for (ObjectKey key : member.second.keys()) {
        key.cluster = id;
        keys.push_back(std::move(key));
      }
    }
    return keys;
  };
}

std::shared_ptr<Controller> ControllerBuilder::complete(std::shared_ptr<Reconciler> reconciler) {
  if (!primary_)
    throw std::logic_error("ControllerBuilder: complete() without for_kind() for " + options_.name);
  auto controller = std::make_shared<Controller>(options_, std::move(reconciler));
  subscribe_hub(*controller);
  manager_.add_controller(controller);
  return controller;
}

std::shared_ptr<Controller> ControllerBuilder::complete(const ReconcilerFactory& make) {
  if (!primary_)
    throw std::logic_error("ControllerBuilder: complete() without for_kind() for " + options_.name);
  auto reconcilers = std::make_shared<ClusterReconcilers>();
  ControllerOptions options = options_;
  if (fleet::Fleet* fleet = manager_.fleet()) {
    // A cluster whose API server hangs holds at most all workers but one.
    if (options.max_concurrent_reconciles > 1 && options.queue.max_in_flight_per_cluster == 0)
      options.queue.max_in_flight_per_cluster =
          static_cast<std::size_t>(options.max_concurrent_reconciles - 1);
    options.cluster_name = [fleet](ClusterId cluster) { return fleet->name_of(cluster).value_or(""); };
    // Sharded: a member's keys are all of its one unit of work.
    options.shard_unit = [fleet](const ObjectKey& key) {
      return key.cluster == kLocalCluster
                 ? key.namespace_name
                 : fleet::member_shard_unit(fleet->name_of(key.cluster).value_or(""));
    };
  }
  auto controller = std::make_shared<Controller>(options, reconcilers);
  subscribe_hub(*controller);
  reconcilers->add(kLocalCluster, make(ClusterCaches(manager_.hub(), scopes(false))), nullptr, true);
  if (manager_.fleet()) engage_members(controller, reconcilers, make);
  manager_.add_controller(controller);
  return controller;
}

void ControllerBuilder::engage_members(const std::shared_ptr<Controller>& controller,
                                       const std::shared_ptr<ClusterReconcilers>& reconcilers,
                                       const ReconcilerFactory& make) {
  struct MemberWatch {
    kube::ResourceType type;
    InformerScope scope;
    EventMapper mapper;
    std::vector<Predicate> predicates;
    std::optional<InformerSet::WatchedAs> role;
  };
  std::vector<MemberWatch> member_watches;
  for (const Watch& watch : watches_) {
    if (watch.hub_only) continue;
    InformerScope scope = watch.scope;
    scope.sharded = false;
    member_watches.push_back({watch.type, std::move(scope), watch.mapper, watch.predicates, watch.role});
  }
  // Sharded: a slot that opens here brings its members' objects to the queue, as a sharded cache
  // redelivers a namespace's.
  const std::shared_ptr<MemberCaches> members = member_caches_;
  // The controller lives as long as the manager, which stops the fleet (and so every member's
  // informers) and the shard coordinator before it goes.
  Controller* raw = controller.get();
  const auto enqueue_all = [raw](const CacheReader& cache, ClusterId id) {
    for (ObjectKey key : cache.keys()) {
      key.cluster = id;
      raw->enqueue(key, {Priority::low});
    }
  };
  if (ShardCoordinator* coordinator = manager_.shard_coordinator()) {
    coordinator->on_slot_opened([members, enqueue_all](int slot) {
      std::lock_guard lock(members->mutex);
      for (const auto& [id, member] : members->by_id) {
        if (member.first == slot) enqueue_all(member.second, id);
      }
    });
  }
  manager_.fleet()->on_engage([raw, reconcilers, members, enqueue_all, gate = manager_.shard_gate(),
                               member_watches = std::move(member_watches), member_scopes = scopes(true),
                               primary = *primary_, make](const ClusterContext& member) {
    for (const MemberWatch& watch : member_watches) {
      std::shared_ptr<InformerSet> informers = member.informers->informer(watch.type, watch.scope);
      if (watch.role) informers->watched_as(*watch.role);
      // Until the member's caches have synced its events stay out of the queue: its reconciler would
      // drop them, and once synced every object of the member is queued from the cache anyway (the
      // events in between are in that cache too).
      std::vector<Predicate> predicates = watch.predicates;
      predicates.insert(predicates.begin(), [reconcilers, id = member.id](const ObjectEvent& /*event*/) {
        return reconcilers->ready(id);
      });
      raw->watch_cluster(member.id, *informers, watch.mapper, std::move(predicates));
    }
    ClusterCaches caches(member, member_scopes);
    const CacheReader primary_cache = caches.cache(primary);
    reconcilers->add(member.id, make(caches), std::make_shared<const ClusterContext>(member), false);
    const ClusterId id = member.id;
    {
      std::lock_guard lock(members->mutex);
      members->by_id.emplace(
          id, std::make_pair(gate ? gate->slot_of(fleet::member_shard_unit(member.name)) : 0, primary_cache));
    }
    fleet::Engagement engagement;
    engagement.synced = [reconcilers, enqueue_all, primary_cache, id] {
      reconcilers->set_ready(id);
      enqueue_all(primary_cache, id);
    };
    engagement.health = [reconcilers, id](bool ready) { reconcilers->set_healthy(id, ready); };
    engagement.disengaged = [reconcilers, members, id] {
      {
        std::lock_guard lock(members->mutex);
        members->by_id.erase(id);
      }
      reconcilers->remove(id);
    };
    return engagement;
  });
}

}  // namespace myop::runtime
