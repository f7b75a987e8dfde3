#include "myresource/kube_cluster.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <random>

#include "kube/resource.h"
#include "myresource/types.h"

namespace myop::myresource {
namespace {

// MicroTime: RFC 3339 with microseconds, as events.k8s.io/v1 eventTime requires.
std::string micro_time(std::chrono::system_clock::time_point time) {
  std::string seconds = format_rfc3339(time);  // "...:SSZ"
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count() % 1000000;
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06lld", static_cast<long long>(micros));
  return seconds.substr(0, seconds.size() - 1) + fraction + "Z";
}

std::string random_suffix() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(random()));
  return buffer;
}

kube::PatchOptions apply_options() {
  kube::PatchOptions options;
  options.field_manager = std::string(kFieldManager);
  // The operator owns these fields: a hand edit (which moved ownership to kubectl) is taken back.
  options.force = true;
  return options;
}

}  // namespace

KubeCluster::KubeCluster(std::shared_ptr<kube::Client> client, std::shared_ptr<runtime::Informer> myresources,
                         std::shared_ptr<runtime::Informer> deployments, std::function<Features()> features,
                         KubeClusterOptions options)
    : client_(std::move(client)),
      myresources_(std::move(myresources)),
      deployments_(std::move(deployments)),
      features_(std::move(features)),
      options_(std::move(options)) {}

ObjectPointer KubeCluster::get_myresource(std::string_view namespace_name, std::string_view name) {
  return myresources_->cache().get({std::string(namespace_name), std::string(name)});
}

ObjectPointer KubeCluster::get_deployment(std::string_view namespace_name, std::string_view name) {
  return deployments_->cache().get({std::string(namespace_name), std::string(name)});
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
  std::string note(message.substr(0, 1024));  // the API server refuses longer notes
  {
    std::string key = subject.uid + "\n" + std::string(type) + "\n" + std::string(reason) + "\n" + note;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(events_mutex_);
    auto found = recent_events_.find(key);
    if (found != recent_events_.end() && now - found->second < options_.event_dedup_window) return;
    recent_events_[key] = now;
    if (recent_events_.size() > 10000) recent_events_.clear();  // bounded memory; worst case a repeat
  }

  kube::Object event(2048);
  auto& allocator = event.allocator();
  auto text = [&](std::string_view value) {
    return kube::JsonValue(value.data(), static_cast<rapidjson::SizeType>(value.size()), allocator);
  };
  kube::JsonValue& root = event.json();
  root.AddMember("apiVersion", "events.k8s.io/v1", allocator);
  root.AddMember("kind", "Event", allocator);
  kube::JsonValue metadata(rapidjson::kObjectType);
  metadata.AddMember("name", text(subject.name + "." + random_suffix()), allocator);
  metadata.AddMember("namespace", text(subject.namespace_name), allocator);
  root.AddMember("metadata", metadata, allocator);
  root.AddMember("eventTime", text(micro_time(std::chrono::system_clock::now())), allocator);
  root.AddMember("reportingController", text(options_.reporting_controller), allocator);
  root.AddMember("reportingInstance",
                 text(options_.reporting_instance.empty() ? "my-operator" : options_.reporting_instance),
                 allocator);
  root.AddMember("action", text(action), allocator);
  root.AddMember("reason", text(reason), allocator);
  root.AddMember("type", text(type), allocator);
  root.AddMember("note", text(note), allocator);
  kube::JsonValue regarding(rapidjson::kObjectType);
  regarding.AddMember("apiVersion", text(subject.api_version), allocator);
  regarding.AddMember("kind", text(subject.kind), allocator);
  regarding.AddMember("namespace", text(subject.namespace_name), allocator);
  regarding.AddMember("name", text(subject.name), allocator);
  regarding.AddMember("uid", text(subject.uid), allocator);
  root.AddMember("regarding", regarding, allocator);

  auto created = client_->create(kube::resources::events(), subject.namespace_name, event.json());
  if (!created) {
    // Events are best effort: a lost event must never fail a reconcile.
    spdlog::warn("event {} {} for {}/{} not recorded: {}", type, reason, subject.namespace_name, subject.name,
                 created.error().to_string());
  }
}

}  // namespace myop::myresource
