#include "runtime/controller/builder.h"

#include <stdexcept>

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
                      std::move(mapper), std::move(options.predicates), std::nullopt});
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

std::shared_ptr<Controller> ControllerBuilder::complete(std::shared_ptr<Reconciler> reconciler) {
  if (!primary_)
    throw std::logic_error("ControllerBuilder: complete() without for_kind() for " + options_.name);
  auto controller = std::make_shared<Controller>(options_, std::move(reconciler));
  for (Watch& watch : watches_) {
    // The informer set lives in the registry for the manager's lifetime, which outlives the controller.
    std::shared_ptr<InformerSet> informers = manager_.informers().informer(watch.type, watch.scope);
    if (watch.role) informers->watched_as(*watch.role);
    controller->watch(*informers, std::move(watch.mapper), std::move(watch.predicates));
  }
  manager_.add_controller(controller);
  return controller;
}

}  // namespace myop::runtime
