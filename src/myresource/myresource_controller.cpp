#include "myresource/myresource_controller.h"

#include <map>
#include <mutex>
#include <optional>

#include "kube/resource.h"
#include "myresource/desired.h"
#include "myresource/feature_flags.h"
#include "myresource/kube_cluster.h"
#include "myresource/metrics.h"
#include "myresource/orphan_sweeper.h"
#include "myresource/reconciler.h"
#include "myresource/types.h"
#include "runtime/controller/builder.h"
#include "runtime/fleet/fleet.h"

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
  // Only the Deployments we manage: every other Deployment of the cluster stays out of memory.
  runtime::OwnsOptions owned;
  owned.label_selector = std::string(kManagedByLabel) + "=" + std::string(kManagedByValue);
  owned.adopted_by = adopting_myresource;
  // The one ConfigMap of feature flags, in the operator's namespace.
  runtime::WatchOptions flag_watch;
  flag_watch.namespaces = std::vector<std::string>{options.operator_namespace};
  flag_watch.field_selector = "metadata.name=" + options.config_map;
  // The flags are the operator's, in its own cluster: they apply to the MyResources of every member too.
  flag_watch.hub_only = true;

  // The caches are the builder's (scoped, and sharded with --sharding, as it watches them); the
  // reconciler and the mapper below read the same ones.
  runtime::ControllerBuilder builder(manager, "myresource");
  builder.for_kind(myresource_type(), {myresource_changed}).owns(kube::resources::deployments(), owned);
  const runtime::CacheReader myresources = builder.cache(myresource_type());
  // A feature-flag change concerns every MyResource, the members' too, at low priority.
  auto every_myresource = runtime::enqueue_mapped(
      [keys = builder.primary_keys_everywhere()](const runtime::ObjectEvent&) { return keys(); },
      runtime::Priority::low);
  builder.watches(kube::resources::config_maps(), every_myresource, flag_watch)
      .max_concurrent_reconciles(options.max_concurrent_reconciles);

  const runtime::CacheReader deployments = builder.cache(kube::resources::deployments());
  auto flags =
      std::make_shared<FeatureFlags>(builder.cache(kube::resources::config_maps()),
                                     runtime::ObjectKey{options.operator_namespace, options.config_map});
  // One reconciler per cluster (the hub, and each member of a fleet), each on its cluster's caches,
  // writer and events. The orphan sweep goes over the same clusters: the hub's, and each member's while
  // its reconciler lives (it goes when the member is disengaged).
  struct Clusters {
    std::mutex mutex;
    std::shared_ptr<KubeCluster> hub;
    std::map<runtime::ClusterId, std::weak_ptr<KubeCluster>> members;
  };
  auto clusters = std::make_shared<Clusters>();
  ReconcilerOptions reconciler_options;
  reconciler_options.stuck_deletion_timeout = options.stuck_deletion_timeout;
  auto controller = builder.complete([clusters, flags, reconciler_options, shard_gate = manager.shard_gate()](
                                         const runtime::ClusterCaches& caches) {
    const runtime::ClusterContext& context = caches.cluster();
    const bool hub = context.id == runtime::kLocalCluster;
    // The cluster keeps its context (the writer it writes through) alive as long as anyone holds it:
    // a sweep still running when its member is disengaged. Sharded: a member's objects are all in
    // its one unit's slot.
    struct Held {
      runtime::ClusterContext context;
      std::optional<KubeCluster> cluster;
    };
    auto held = std::make_shared<Held>(Held{context, std::nullopt});
    held->cluster.emplace(
        *held->context.writer, caches.cache(myresource_type()), caches.cache(kube::resources::deployments()),
        [flags] { return flags->current(); }, context.recorder, shard_gate,
        hub || !shard_gate ? std::string() : runtime::fleet::member_shard_unit(context.name));
    std::shared_ptr<KubeCluster> cluster(held, &*held->cluster);
    std::lock_guard lock(clusters->mutex);
    if (hub) {
      clusters->hub = cluster;
    } else {
      clusters->members[context.id] = cluster;
    }
    return std::make_shared<MyResourceReconciler>(cluster, reconciler_options);
  });

  OrphanSweeperOptions sweep;
  sweep.period = options.orphan_sweep_period;
  sweep.registry = manager.registry();
  sweep.clock = manager.clock();
  manager.add_runnable(std::make_shared<OrphanSweeper>(
      [clusters] {
        std::vector<std::shared_ptr<OrphanSweepCluster>> swept;
        std::lock_guard lock(clusters->mutex);
        swept.push_back(clusters->hub);
        for (auto member = clusters->members.begin(); member != clusters->members.end();) {
          if (auto live = member->second.lock()) {
            swept.push_back(std::move(live));
            ++member;
          } else {
            member = clusters->members.erase(member);  // disengaged
          }
        }
        return swept;
      },
      sweep));
  register_build_info(*manager.registry(), options.version);
  manager.add_collectable(make_cache_gauges(myresources, deployments));
  return controller;
}

}  // namespace myop::myresource
