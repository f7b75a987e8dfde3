#include "myresource/kube_cluster.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "kube/resource.h"
#include "myresource/types.h"

namespace myop::myresource {
namespace {

kube::PatchOptions apply_options() {
  kube::PatchOptions options;
  options.field_manager = std::string(kFieldManager);
  // The operator owns these fields: a hand edit (which moved ownership to kubectl) is taken back.
  options.force = true;
  return options;
}

}  // namespace

KubeCluster::KubeCluster(std::shared_ptr<kube::Client> client,
                         std::shared_ptr<runtime::InformerSet> myresources,
                         std::shared_ptr<runtime::InformerSet> deployments,
                         std::function<Features()> features, std::shared_ptr<runtime::EventRecorder> recorder)
    : client_(std::move(client)),
      myresources_(std::move(myresources)),
      deployments_(std::move(deployments)),
      features_(std::move(features)),
      recorder_(std::move(recorder)) {}

ObjectPointer KubeCluster::get_myresource(std::string_view namespace_name, std::string_view name) {
  return myresources_->get({std::string(namespace_name), std::string(name)});
}

ObjectPointer KubeCluster::get_deployment(std::string_view namespace_name, std::string_view name) {
  return deployments_->get({std::string(namespace_name), std::string(name)});
}

Features KubeCluster::features() { return features_ ? features_() : Features{}; }

kube::Result<void> KubeCluster::apply_deployment(const kube::Object& desired,
                                                 std::string_view based_on_resource_version,
                                                 std::stop_token stop) {
  auto answer = client_->apply(kube::resources::deployments(), desired.namespace_name(), desired.json(),
                               apply_options(), {}, stop);
  if (!answer) return std::move(answer).error();
  deployments_->observe_write(answer.value(), based_on_resource_version);
  return {};
}

kube::Result<void> KubeCluster::delete_deployment(std::string_view namespace_name, std::string_view name,
                                                  std::string_view uid, std::stop_token stop) {
  kube::DeleteOptions options;
  // Foreground: the Deployment disappears only after its pods, so "children gone" means gone.
  options.propagation_policy = "Foreground";
  options.precondition_uid = std::string(uid);
  auto answer = client_->remove(kube::resources::deployments(), namespace_name, name, options, stop);
  if (!answer) return std::move(answer).error();
  return {};
}

kube::Result<void> KubeCluster::set_myresource_finalizers(std::string_view namespace_name,
                                                          std::string_view name,
                                                          const std::vector<std::string>& finalizers,
                                                          std::string_view resource_version,
                                                          std::stop_token stop) {
  // A merge patch replaces the whole list; the resourceVersion makes it fail (409) instead of
  // dropping a finalizer another controller added meanwhile.
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("metadata");
  writer.StartObject();
  writer.Key("resourceVersion");
  writer.String(resource_version.data(), static_cast<rapidjson::SizeType>(resource_version.size()));
  writer.Key("finalizers");
  writer.StartArray();
  for (const std::string& finalizer : finalizers) writer.String(finalizer.c_str());
  writer.EndArray();
  writer.EndObject();
  writer.EndObject();
  kube::PatchOptions options;
  options.field_manager = std::string(kFieldManager);
  auto answer = client_->patch(kube::resources::my_resources(), namespace_name, name, kube::PatchType::Merge,
                               buffer.GetString(), options, {}, stop);
  if (!answer) return std::move(answer).error();
  myresources_->observe_write(answer.value(), resource_version);
  return {};
}

kube::Result<void> KubeCluster::apply_myresource_status(const kube::Object& body,
                                                        std::string_view based_on_resource_version,
                                                        std::stop_token stop) {
  auto answer = client_->apply(kube::resources::my_resources(), body.namespace_name(), body.json(),
                               apply_options(), "status", stop);
  if (!answer) return std::move(answer).error();
  myresources_->observe_write(answer.value(), based_on_resource_version);
  return {};
}

void KubeCluster::record_event(const EventSubject& subject, std::string_view type, std::string_view reason,
                               std::string_view action, std::string_view message) {
  if (!recorder_) return;
  recorder_->record(subject,
                    type == "Warning" ? runtime::EventSeverity::warning : runtime::EventSeverity::normal,
                    std::string(reason), std::string(action), std::string(message));
}

}  // namespace myop::myresource
