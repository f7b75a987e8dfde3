#include "runtime/controller/writer.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "runtime/cache/informer.h"

namespace myop::runtime {
namespace {

ObjectKey key_of_object(const kube::Object& object) {
  return {std::string(object.namespace_name()), std::string(object.name())};
}

}  // namespace

Writer::Writer(std::shared_ptr<kube::Client> client, std::shared_ptr<InformerRegistry> informers,
               std::string field_manager)
    : client_(std::move(client)),
      informers_(std::move(informers)),
      field_manager_(std::move(field_manager)) {}

Writer::OpenWrite::OpenWrite(const InformerRegistry* informers, const kube::ResourceType& type, ObjectKey key)
    : key_(std::move(key)) {
  if (informers == nullptr) return;
  for (auto& caching : informers->caching(type, key_.namespace_name)) {
    std::string version = caching->begin_write(key_);
    snapshots_.push_back({std::move(caching), std::move(version)});
  }
}

Writer::OpenWrite::~OpenWrite() {
  for (const Snapshot& snapshot : snapshots_) snapshot.informers->end_write(key_);
}

ObjectPointer Writer::store(const std::vector<Snapshot>& snapshots, const rapidjson::Document& answer) {
  ObjectPointer stored;
  for (const Snapshot& snapshot : snapshots) {
    ObjectPointer taken = snapshot.informers->store_written(answer, snapshot.resource_version);
    if (!stored) stored = std::move(taken);
  }
  if (stored) return stored;
  // No cache took it (none caches the kind here, or the watch was faster): the answer as a cache
  // would hold it.
  kube::Object object = kube::Object::copy_of(answer);
  strip_for_cache(object);
  return std::make_shared<const kube::Object>(std::move(object));
}

kube::Result<ObjectPointer> Writer::apply(const kube::ResourceType& type, const kube::Object& object,
                                          const ApplyOptions& options, std::stop_token stop) {
  if (fence_) {
    if (auto allowed = fence_(type, key_of_object(object)); !allowed) return std::move(allowed).error();
  }
  const OpenWrite open(informers_.get(), type, key_of_object(object));
  kube::PatchOptions patch_options;
  patch_options.field_manager = field_manager_;
  patch_options.force = options.force;
  auto answer =
      client_->apply(type, object.namespace_name(), object.json(), patch_options, options.subresource, stop);
  if (!answer) return std::move(answer).error();
  return store(open.snapshots(), answer.value());
}

kube::Result<ObjectPointer> Writer::create(const kube::ResourceType& type, const kube::Object& object,
                                           std::stop_token stop) {
  if (fence_) {
    if (auto allowed = fence_(type, key_of_object(object)); !allowed) return std::move(allowed).error();
  }
  const OpenWrite open(informers_.get(), type, key_of_object(object));
  kube::WriteOptions options;
  options.field_manager = field_manager_;
  auto answer = client_->create(type, object.namespace_name(), object.json(), options, stop);
  if (!answer) return std::move(answer).error();
  return store(open.snapshots(), answer.value());
}

kube::Result<ObjectPointer> Writer::patch(const kube::ResourceType& type, const ObjectKey& key,
                                          kube::PatchType patch_type, std::string_view body,
                                          std::string_view subresource, std::stop_token stop) {
  if (fence_) {
    if (auto allowed = fence_(type, key); !allowed) return std::move(allowed).error();
  }
  const OpenWrite open(informers_.get(), type, key);
  kube::PatchOptions options;
  options.field_manager = field_manager_;
  auto answer =
      client_->patch(type, key.namespace_name, key.name, patch_type, body, options, subresource, stop);
  if (!answer) return std::move(answer).error();
  return store(open.snapshots(), answer.value());
}

kube::Result<ObjectPointer> Writer::set_finalizers(const kube::ResourceType& type,
                                                   const kube::Object& current,
                                                   const std::vector<std::string>& finalizers,
                                                   std::stop_token stop) {
  // A merge patch replaces the whole list; the resourceVersion makes it fail (409) instead of
  // dropping a finalizer another controller added meanwhile.
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> json(buffer);
  const std::string_view version = current.resource_version();
  json.StartObject();
  json.Key("metadata");
  json.StartObject();
  json.Key("resourceVersion");
  json.String(version.data(), static_cast<rapidjson::SizeType>(version.size()));
  json.Key("finalizers");
  json.StartArray();
  for (const std::string& finalizer : finalizers) {
    json.String(finalizer.data(), static_cast<rapidjson::SizeType>(finalizer.size()));
  }
  json.EndArray();
  json.EndObject();
  json.EndObject();
  return patch(type, key_of_object(current), kube::PatchType::Merge, {buffer.GetString(), buffer.GetSize()},
               {}, stop);
}

kube::Result<ObjectPointer> Writer::remove(const kube::ResourceType& type, const ObjectKey& key,
                                           const kube::DeleteOptions& options, std::stop_token stop) {
  if (fence_) {
    if (auto allowed = fence_(type, key); !allowed) return std::move(allowed).error();
  }
  const OpenWrite open(informers_.get(), type, key);
  auto answer = client_->remove(type, key.namespace_name, key.name, options, stop);
  if (!answer) {
    if (kube::is_not_found(answer.error())) {
      for (const Snapshot& snapshot : open.snapshots())
        snapshot.informers->store_deleted(key, snapshot.resource_version);
    }
    return std::move(answer).error();
  }
  // The object itself while finalizers or a grace period still hold it; otherwise the object is gone
  // (the answer is then a Status, or the object's last state for kinds that return it).
  const kube::ObjectView returned(answer.value());
  const kube::JsonValue* grace = returned.find({"metadata", "deletionGracePeriodSeconds"});
  const bool still_there =
      returned.kind() != "Status" && returned.is_being_deleted() &&
      (!returned.finalizers().empty() || (grace != nullptr && grace->IsInt64() && grace->GetInt64() > 0));
  if (!still_there) {
    for (const Snapshot& snapshot : open.snapshots())
      snapshot.informers->store_deleted(key, snapshot.resource_version);
    return ObjectPointer();
  }
  return store(open.snapshots(), answer.value());
}

Writer::Fence shard_fence(std::shared_ptr<const ShardGate> gate) {
  return
      [gate = std::move(gate)](const kube::ResourceType& type, const ObjectKey& key) -> kube::Result<void> {
        if (!type.namespaced || gate->may_write(key.namespace_name)) return {};
        return kube::make_error(kube::Reason::Cancelled, "not written: the shard slot of namespace " +
                                                             key.namespace_name +
                                                             " is not this replica's now (handed over, or "
                                                             "membership lost)");
      };
}

}  // namespace myop::runtime
