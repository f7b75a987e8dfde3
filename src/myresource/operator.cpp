#include "myresource/operator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "kube/object.h"
#include "myresource/desired.h"
#include "myresource/kube_cluster.h"
#include "myresource/orphans.h"
#include "myresource/reconciler.h"
#include "myresource/types.h"
#include "runtime/event_handler.h"
#include "runtime/logging.h"
#include "runtime/predicate.h"

namespace myop::myresource {
namespace {

kube::ResourceType myresource_type() {
  return {std::string(kGroup), std::string(kVersion), std::string(kPlural), true, std::string(kKind)};
}

std::string managed_by_selector() {
  return std::string(kManagedByLabel) + "=" + std::string(kManagedByValue);
}

// A MyResource event worth a reconcile: anything but a status-only write (which would loop on our
// own status updates). Spec changes move the generation; labels, annotations (canary, features),
// finalizers and deletion do not, so they are checked on their own.
bool myresource_changed(const runtime::ObjectEvent& event) {
  if (event.type != runtime::EventType::updated || !event.old_object) return true;
  const kube::ObjectView now = event.object->view();
  const kube::ObjectView before = event.old_object->view();
  return now.generation() != before.generation() || now.labels() != before.labels() ||
         now.annotations() != before.annotations() || now.finalizers() != before.finalizers() ||
         now.deletion_timestamp() != before.deletion_timestamp();
}

}  // namespace

// The periodic work besides reconciles: gauges every few seconds, the orphan sweep every period.
class Operator::Background final : public runtime::Runnable {
 public:
  Background(Operator& owner) : owner_(owner) {}
  std::string name() const override { return "myresource-background"; }
  bool has_synced() const override { return true; }
  void start() override {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }
  void stop() override {
    thread_.request_stop();
    {
      std::lock_guard lock(mutex_);
      wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  // Set by the manager wiring: whether this replica may write (leads, or no election).
  std::function<bool()> may_write = [] { return true; };

 private:
  void run(std::stop_token stop) {
    // The first pass waits a little after start-up (caches settle, a leader takes over), but never
    // longer than one period.
    auto next_sweep =
        std::chrono::steady_clock::now() + std::min<std::chrono::steady_clock::duration>(
                                               std::chrono::seconds(30), owner_.options_.orphan_sweep_period);
    while (!stop.stop_requested()) {
      if (owner_.myresources_->has_synced() && owner_.deployments_->has_synced()) {
        owner_.managed_resources_->Set(static_cast<double>(owner_.myresources_->size()));
        owner_.canaries_active_->Set(static_cast<double>(
            owner_.deployments_->list_by_label(kTrackLabel, to_string(Track::Canary)).size()));
        if (std::chrono::steady_clock::now() >= next_sweep && may_write()) {
          owner_.sweep_orphans();
          next_sweep = std::chrono::steady_clock::now() + owner_.options_.orphan_sweep_period;
        }
      }
      std::unique_lock lock(mutex_);
      // Every 5 s, or every sweep period when that is shorter (--orphan-sweep-period 2s means 2 s).
      wake_.wait_for(lock,
                     std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(5),
                                                                   owner_.options_.orphan_sweep_period),
                     [&] { return stop.stop_requested(); });
    }
  }

  Operator& owner_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::jthread thread_;
};

Operator::Operator(std::shared_ptr<kube::Client> client, OperatorOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (!options_.registry) options_.registry = std::make_shared<prometheus::Registry>();

  runtime::InformerOptions myresource_options;
  myresource_options.name = "myresources";
  myresource_options.resync_period = options_.resync_period;
  myresources_ = std::make_shared<runtime::InformerSet>(client_, myresource_type(), options_.namespaces,
                                                        myresource_options);

  // Only the Deployments we manage: a label selector keeps every other Deployment of the cluster
  // out of memory.
  runtime::InformerOptions deployment_options;
  deployment_options.name = "deployments";
  deployment_options.resync_period = options_.resync_period;
  deployment_options.watcher.label_selector = managed_by_selector();
  deployments_ = std::make_shared<runtime::InformerSet>(client_, kube::resources::deployments(),
                                                        options_.namespaces, deployment_options);

  runtime::InformerOptions config_map_options;
  config_map_options.name = "feature-flags";
  config_map_options.namespace_name = options_.operator_namespace;
  config_map_options.resync_period = options_.resync_period;
  config_map_options.watcher.field_selector = "metadata.name=" + options_.config_map;
  config_maps_ = std::make_shared<runtime::Informer>(
      kube::make_client_watch_source(client_, kube::resources::config_maps(), options_.operator_namespace),
      config_map_options);

  runtime::EventRecorderOptions recorder_options;
  if (!options_.reporting_instance.empty()) recorder_options.reporting_instance = options_.reporting_instance;
  recorder_ = std::make_shared<runtime::EventRecorder>(client_, recorder_options);

  cluster_ = std::make_shared<KubeCluster>(
      client_, myresources_, deployments_, [this] { return features(); }, recorder_);

  runtime::ControllerOptions controller_options;
  controller_options.name = "myresource";
  controller_options.max_concurrent_reconciles = options_.max_concurrent_reconciles;
  controller_options.registry = options_.registry;
  controller_ = std::make_shared<runtime::Controller>(controller_options,
                                                      std::make_shared<MyResourceReconciler>(cluster_));

  controller_->watch_primary(*myresources_, {myresource_changed});
  // Our Deployments, mapped to their controller owner (Owns()), or, for a Deployment that carries
  // our labels but no owner, to the MyResource its label names (adoption).
  controller_->watch(*deployments_, [](const runtime::ObjectEvent& event) {
    std::vector<runtime::EnqueueRequest> requests =
        runtime::enqueue_controller_owner(std::string(kGroup), std::string(kKind))(event);
    if (requests.empty() && event.object && !event.object->view().controller_owner()) {
      if (auto owner = event.object->view().label(kMyResourceLabel)) {
        const runtime::Priority priority =
            event.initial_list ? runtime::Priority::low : runtime::Priority::normal;
        requests.push_back({{std::string(event.object->namespace_name()), std::string(*owner)}, priority});
      }
    }
    return requests;
  });
  // A feature-flag change concerns every MyResource.
  controller_->watch(*config_maps_, runtime::enqueue_mapped(
                                        [this](const runtime::ObjectEvent&) {
                                          std::vector<runtime::ObjectKey> keys;
                                          for (const auto& object : myresources_->list())
                                            keys.push_back(runtime::key_of(*object));
                                          return keys;
                                        },
                                        runtime::Priority::low));

  auto& build_info = prometheus::BuildGauge()
                         .Name("myoperator_build_info")
                         .Help("Build information of my-operator; the value is always 1.")
                         .Register(*options_.registry);
  build_info.Add({{"version", options_.version}}).Set(1);
  managed_resources_ = &prometheus::BuildGauge()
                            .Name("myoperator_managed_resources")
                            .Help("MyResource objects in the operator's cache.")
                            .Register(*options_.registry)
                            .Add({});
  canaries_active_ = &prometheus::BuildGauge()
                          .Name("myoperator_canaries_active")
                          .Help("Canary Deployments that exist now.")
                          .Register(*options_.registry)
                          .Add({});
  orphans_family_ =
      &prometheus::BuildCounter()
           .Name("myoperator_orphans_total")
           .Help("Deployments found managed by my-operator whose owner is gone, by action taken.")
           .Register(*options_.registry);
  background_ = std::make_shared<Background>(*this);
}

Operator::~Operator() = default;

void Operator::register_with(runtime::Manager& manager) {
  manager.add_runnable(config_maps_);
  manager.add_runnable(myresources_);
  manager.add_runnable(deployments_);
  manager.add_controller(controller_);
  manager.add_runnable(background_);
}

void Operator::set_may_write(std::function<bool()> may_write) {
  background_->may_write = std::move(may_write);
}

Features Operator::features() const {
  const runtime::ObjectPointer config_map =
      config_maps_->cache().get({options_.operator_namespace, options_.config_map});
  const std::string version = config_map ? std::string(config_map->resource_version()) : std::string();
  std::lock_guard lock(features_mutex_);
  if (version == features_version_) return features_;
  ParsedFeatures parsed =
      features_from_changed_config_map(config_map ? &config_map->json() : nullptr, features_);
  for (const std::string& error : parsed.errors) {
    spdlog::warn("feature-flag ConfigMap {}/{} (resourceVersion {}): {}; that flag keeps its last good value",
                 options_.operator_namespace, options_.config_map, version, error);
  }
  if (parsed.features != features_ || features_version_ == "-") {
    spdlog::info("feature flags: canary={} orphanSweep={} orphanPolicy={}", parsed.features.canary,
                 parsed.features.orphan_sweep, to_string(parsed.features.orphan_policy));
  }
  features_version_ = version;
  features_ = parsed.features;
  return features_;
}

void Operator::sweep_orphans() {
  const Features current = features();
  if (!current.orphan_sweep) return;
  for (const Orphan& orphan : find_orphans(
           deployments_->list(), [this](const runtime::ObjectKey& key) { return myresources_->get(key); })) {
    const bool remove = current.orphan_policy == OrphanPolicy::Delete;
    if (!remove && !reported_orphans_.insert(orphan.uid).second) continue;  // reported once
    runtime::log(spdlog::level::warn, remove ? "deleting orphaned Deployment" : "found orphaned Deployment",
                 {{"namespace", orphan.namespace_name}, {"name", orphan.name}, {"reason", orphan.reason}});
    runtime::EventSubject subject{"apps/v1",   "Deployment", orphan.namespace_name,
                                  orphan.name, orphan.uid,   ""};
    if (remove) {
      kube::DeleteOptions options;
      options.propagation_policy = "Background";
      options.precondition_uid = orphan.uid;
      auto deleted =
          client_->remove(kube::resources::deployments(), orphan.namespace_name, orphan.name, options);
      if (!deleted && deleted.error().reason != kube::Reason::NotFound) {
        spdlog::warn("orphan sweep: deleting Deployment {}/{} failed: {}", orphan.namespace_name, orphan.name,
                     deleted.error().message);
        continue;
      }
      recorder_->record(subject, runtime::EventSeverity::warning, "OrphanDeleted", "Delete", orphan.reason);
      orphans_family_->Add({{"action", "deleted"}}).Increment();
    } else {
      recorder_->record(subject, runtime::EventSeverity::warning, "OrphanFound", "Report", orphan.reason);
      orphans_family_->Add({{"action", "reported"}}).Increment();
    }
  }
}

}  // namespace myop::myresource
