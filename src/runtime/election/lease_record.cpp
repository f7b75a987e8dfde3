#include "runtime/election/lease_record.h"

#include <unistd.h>

#include <cstdio>

#include "base/uuid.h"
#include "kube/object.h"

namespace myop::runtime {

namespace {

std::string text_at(const kube::JsonValue* object, std::string_view name) {
  if (object == nullptr || !object->IsObject()) return {};
  const auto* member = kube::find_member(*object, name);
  return member != nullptr && member->IsString() ? std::string(member->GetString(), member->GetStringLength())
                                                 : std::string();
}

int int_at(const kube::JsonValue* object, std::string_view name) {
  if (object == nullptr || !object->IsObject()) return 0;
  const auto* member = kube::find_member(*object, name);
  return member != nullptr && member->IsInt() ? member->GetInt() : 0;
}

}  // namespace

std::string default_holder_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return std::string(host) + "_" + base::random_uuid();
}

LeaseRecord parse_lease(const kube::JsonValue& lease) {
  LeaseRecord record;
  const kube::ObjectView view(lease);
  record.name = std::string(view.name());
  record.resource_version = std::string(view.resource_version());
  for (const auto& [key, value] : view.labels()) record.labels.emplace(key, value);
  const kube::JsonValue* spec = lease.IsObject() ? kube::find_member(lease, "spec") : nullptr;
  record.holder = text_at(spec, "holderIdentity");
  record.acquire_time = text_at(spec, "acquireTime");
  record.renew_time = text_at(spec, "renewTime");
  record.duration_seconds = int_at(spec, "leaseDurationSeconds");
  record.transitions = int_at(spec, "leaseTransitions");
  return record;
}

rapidjson::Document lease_document(std::string_view namespace_name, const LeaseRecord& record) {
  rapidjson::Document lease(rapidjson::kObjectType);
  auto& allocator = lease.GetAllocator();
  auto text = [&](std::string_view value) { return kube::json_string(value, allocator); };
  lease.AddMember("apiVersion", "coordination.k8s.io/v1", allocator);
  lease.AddMember("kind", "Lease", allocator);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", text(record.name), allocator);
  metadata.AddMember("namespace", text(namespace_name), allocator);
  if (!record.resource_version.empty())
    metadata.AddMember("resourceVersion", text(record.resource_version), allocator);
  if (!record.labels.empty()) {
    rapidjson::Value labels(rapidjson::kObjectType);
    for (const auto& [key, value] : record.labels) labels.AddMember(text(key), text(value), allocator);
    metadata.AddMember("labels", labels, allocator);
  }
  lease.AddMember("metadata", metadata, allocator);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("holderIdentity", text(record.holder), allocator);
  if (record.duration_seconds > 0) spec.AddMember("leaseDurationSeconds", record.duration_seconds, allocator);
  if (!record.acquire_time.empty()) spec.AddMember("acquireTime", text(record.acquire_time), allocator);
  if (!record.renew_time.empty()) spec.AddMember("renewTime", text(record.renew_time), allocator);
  spec.AddMember("leaseTransitions", record.transitions, allocator);
  lease.AddMember("spec", spec, allocator);
  return lease;
}

}  // namespace myop::runtime
