#include "myresource/myresource_controller.h"

#include "kube/resource.h"
#include "myresource/desired.h"
#include "myresource/feature_flags.h"
#include "myresource/kube_cluster.h"
#include "myresource/metrics.h"
#include "myresource/orphan_sweeper.h"
#include "myresource/reconciler.h"
#include "myresource/types.h"
#include "runtime/builder.h"

namespace myop::myresource {
namespace {

// Both absent, or both present and equal.
bool same_json(const kube::JsonValue* now, const kube::JsonValue* before) {
  return now == nullptr ? before == nullptr : before != nullptr && *now == *before;
}

// A Deployment with our labels but no controller owner is adopted by the MyResource its label names.
std::optional<runtime::ObjectKey> adopting_myresource(const kube::Object& deployment) {
  auto owner = deployment.view().label(kMyResourceLabel);
  if (!owner) return std::nullopt;
  return runtime::ObjectKey{std::string(deployment.namespace_name()), std::string(*owner)};
}

}  // namespace

// The spec is compared itself, not only the generation: the API server moves
// the generation when the spec changes in the version of the request, so a v1alpha1 write that only
// changes the canary or features annotations (spec.canary and spec.features of the v1beta1 we read,
// through the conversion webhook) keeps the generation. Labels, annotations, finalizers and
// deletion never move it, so they are checked on their own.
bool myresource_changed(const runtime::ObjectEvent& event) {
  if (event.type != runtime::EventType::updated || !event.old_object) return true;
  const kube::ObjectView now = event.object->view();
  const kube::ObjectView before = event.old_object->view();
  return now.generation() != before.generation() || !same_json(now.find({"spec"}), before.find({"spec"})) ||
         now.labels() != before.labels() || now.annotations() != before.annotations() ||
         now.finalizers() != before.finalizers() || now.deletion_timestamp() != before.deletion_timestamp();
}

std::shared_ptr<runtime::Controller> add_myresource_controller(runtime::Manager& manager,
                                                               const MyResourceControllerOptions& options) {
  // Sharded (--sharding), both are cached per shard slot, as the controller builder caches them.
  const bool sharded = manager.shard_gate() != nullptr;
  const runtime::InformerScope scope{manager.namespaces(), "", "", sharded};
  // Only the Deployments we manage: every other Deployment of the cluster stays out of memory.
  const std::string managed_by = std::string(kManagedByLabel) + "=" + std::string(kManagedByValue);
  const runtime::InformerScope deployment_scope{manager.namespaces(), managed_by, "", sharded};
  const runtime::InformerScope flags_scope{
      {options.operator_namespace}, "", "metadata.name=" + options.config_map};

  auto& informers = manager.informers();
  auto myresources = informers.informer(myresource_type(), scope);
  auto deployments = informers.informer(kube::resources::deployments(), deployment_scope);
  auto flags =
      std::make_shared<FeatureFlags>(informers.informer(kube::resources::config_maps(), flags_scope),
                                     runtime::ObjectKey{options.operator_namespace, options.config_map});
  auto cluster = std::make_shared<KubeCluster>(
      manager.writer(), myresources, deployments, [flags] { return flags->current(); },
      manager.event_recorder(), manager.shard_gate());

  runtime::OwnsOptions owned;
  owned.label_selector = managed_by;
  owned.adopted_by = adopting_myresource;
  runtime::WatchOptions flag_watch;
  flag_watch.namespaces = flags_scope.namespaces;
  flag_watch.field_selector = flags_scope.field_selector;
  // A feature-flag change concerns every MyResource, at low priority.
  auto every_myresource = runtime::enqueue_mapped(
      [myresources](const runtime::ObjectEvent&) { return myresources->keys(); }, runtime::Priority::low);

  auto controller = runtime::ControllerBuilder(manager, "myresource")
                        .for_kind(myresource_type(), {myresource_changed})
                        .owns(kube::resources::deployments(), owned)
                        .watches(kube::resources::config_maps(), every_myresource, flag_watch)
                        .max_concurrent_reconciles(options.max_concurrent_reconciles)
                        .complete(std::make_shared<MyResourceReconciler>(cluster));

  OrphanSweeperOptions sweep;
  sweep.period = options.orphan_sweep_period;
  sweep.registry = manager.registry();
  manager.add_runnable(std::make_shared<OrphanSweeper>(cluster, sweep));
  register_build_info(*manager.registry(), options.version);
  manager.add_collectable(make_cache_gauges(myresources, deployments));
  return controller;
}

}  // namespace myop::myresource
