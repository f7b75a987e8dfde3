#pragma once
// Turning an event into work: which keys to enqueue, at which priority. Like controller-runtime's
// handler.EnqueueRequestForObject (For), EnqueueRequestForOwner (Owns) and EnqueueRequestsFromMapFunc
// (Watches), plus the priority policy of docs/design.md:
//   initial list and resync: low; user changes and deletions: high; child status changes: normal.
#include <functional>
#include <string>
#include <vector>

#include "runtime/cache/object_event.h"
#include "runtime/queue/object_key.h"
#include "runtime/queue/priority.h"

namespace myop::runtime {

struct EnqueueRequest {
  ObjectKey key;
  Priority priority = Priority::normal;
  friend bool operator==(const EnqueueRequest&, const EnqueueRequest&) = default;
};

using EventMapper = std::function<std::vector<EnqueueRequest>(const ObjectEvent&)>;

// The object itself (the controller's primary kind).
EventMapper enqueue_object();

// The controller owner of the object, when it is of `owner_group` (e.g. "myorg.io", "" for core)
// and `owner_kind`. Owners of namespaced objects live in the same namespace; pass
// owner_namespaced=false for a cluster-scoped owner.
EventMapper enqueue_controller_owner(std::string owner_group, std::string owner_kind,
                                     bool owner_namespaced = true);

// Any mapping, e.g. a ConfigMap of feature flags to every primary object. `priority` applies to
// live events; initial list and resync events are always low.
EventMapper enqueue_mapped(std::function<std::vector<ObjectKey>(const ObjectEvent&)> map,
                           Priority priority = Priority::normal);

ObjectKey key_of(const kube::Object& object);

// The group of an apiVersion: "apps/v1" -> "apps", "v1" -> "".
std::string group_of(std::string_view api_version);

}  // namespace myop::runtime
