#include "myresource/kube_cluster.h"

#include "kube/resource.h"
#include "myresource/types.h"

namespace myop::myresource {

KubeCluster::KubeCluster(runtime::Writer& writer, runtime::CacheReader myresources,
                         runtime::CacheReader deployments, std::function<Features()> features,
                         std::shared_ptr<runtime::EventRecorder> recorder,
                         std::shared_ptr<runtime::ShardGate> shard_gate, std::string shard_unit)
    : writer_(writer),
      myresources_(std::move(myresources)),
      deployments_(std::move(deployments)),
      features_(std::move(features)),
      recorder_(std::move(recorder)),
      shard_gate_(std::move(shard_gate)),
      shard_unit_(std::move(shard_unit)) {}

ObjectPointer KubeCluster::get_myresource(std::string_view namespace_name, std::string_view name) {
  return myresources_.get({std::string(namespace_name), std::string(name)});
}

ObjectPointer KubeCluster::get_myresource(const runtime::ObjectKey& key) { return myresources_.get(key); }

ObjectPointer KubeCluster::get_deployment(std::string_view namespace_name, std::string_view name) {
  return deployments_.get({std::string(namespace_name), std::string(name)});
}

Features KubeCluster::features() { return features_ ? features_() : Features{}; }

kube::Result<ObjectPointer> KubeCluster::apply_deployment(const kube::Object& desired, std::stop_token stop) {
  return writer_.apply(kube::resources::deployments(), desired, {}, stop);
}

kube::Result<ObjectPointer> KubeCluster::delete_deployment(std::string_view namespace_name,
                                                           std::string_view name, std::string_view uid,
                                                           Propagation propagation, std::stop_token stop) {
  kube::DeleteOptions options;
  options.propagation_policy = propagation == Propagation::foreground ? "Foreground" : "Background";
  options.precondition_uid = std::string(uid);
  return writer_.remove(kube::resources::deployments(), {std::string(namespace_name), std::string(name)},
                        options, stop);
}

kube::Result<ObjectPointer> KubeCluster::set_myresource_finalizers(const kube::Object& myresource,
                                                                   const std::vector<std::string>& finalizers,
                                                                   std::stop_token stop) {
  return writer_.set_finalizers(myresource_type(), myresource, finalizers, stop);
}

kube::Result<ObjectPointer> KubeCluster::apply_myresource_status(const kube::Object& body,
                                                                 std::stop_token stop) {
  runtime::ApplyOptions options;
  options.subresource = "status";
  return writer_.apply(myresource_type(), body, options, stop);
}

void KubeCluster::record_event(const EventSubject& subject, std::string_view type, std::string_view reason,
                               std::string_view action, std::string_view message) {
  if (!recorder_) return;
  recorder_->record(subject,
                    type == "Warning" ? runtime::EventSeverity::warning : runtime::EventSeverity::normal,
                    std::string(reason), std::string(action), std::string(message));
}

void KubeCluster::for_each_managed_deployment(const std::function<void(const ObjectPointer&)>& visit) {
  if (!shard_gate_) return deployments_.for_each(visit);
  if (!shard_unit_.empty()) {
    if (shard_gate_->active(shard_gate_->slot_of(shard_unit_))) deployments_.for_each(visit);
    return;
  }
  deployments_.for_each([&](const ObjectPointer& deployment) {
    if (shard_gate_->active(runtime::shard_slot(deployment->namespace_name()))) visit(deployment);
  });
}

kube::Result<void> KubeCluster::delete_orphan(const Orphan& orphan, std::stop_token stop) {
  const std::optional<runtime::ShardGate::Ticket> ticket =
      !shard_gate_ ? std::nullopt
                   : shard_gate_->enter(shard_unit_.empty() ? orphan.namespace_name : shard_unit_);
  if (shard_gate_) {
    if (!ticket) {
      return kube::make_error(kube::Reason::Conflict, "the shard slot of namespace " + orphan.namespace_name +
                                                          " moved to another replica during the sweep");
    }
  }
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  options.precondition_uid = orphan.uid;
  auto deleted =
      writer_.remove(kube::resources::deployments(), {orphan.namespace_name, orphan.name}, options, stop);
  if (!deleted) return std::move(deleted).error();
  return {};
}

}  // namespace myop::myresource
