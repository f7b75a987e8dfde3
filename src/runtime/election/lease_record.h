#pragma once
// A coordination.k8s.io/v1 Lease as the shard coordinator reads and writes it: who holds it, when it
// was last renewed, and the resourceVersion a conditional update is based on.
#include <rapidjson/document.h>

#include <map>
#include <string>
#include <string_view>

#include "kube/object.h"

namespace myop::runtime {

struct LeaseRecord {
  std::string name;
  std::string holder;  // spec.holderIdentity ("" = free)
  std::string acquire_time;
  std::string renew_time;  // MicroTime text; compared only for equality
  int duration_seconds = 0;
  int transitions = 0;
  std::string resource_version;  // "" for a create
  std::map<std::string, std::string> labels;
};

// Missing fields read as empty.
LeaseRecord parse_lease(const kube::JsonValue& lease);

// The Lease object for a create (resource_version empty) or a conditional update.
rapidjson::Document lease_document(std::string_view namespace_name, const LeaseRecord& record);

// A holder identity unique to this process: the host name and a random UUID.
std::string default_holder_identity();

}  // namespace myop::runtime
