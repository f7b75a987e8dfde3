#pragma once
// Orphans: Deployments labelled managed-by my-operator whose controller owner, a MyResource, no
// longer exists (or is a different object with the same name). A pure decision over cached
// objects; the operator deletes or reports what it returns, per the orphanPolicy feature flag.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/object.h"
#include "runtime/queue/object_key.h"

namespace myop::myresource {

struct Orphan {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string reason;  // a sentence for the event and the log
};

using MyResourceLookup = std::function<std::shared_ptr<const kube::Object>(const runtime::ObjectKey&)>;

// Whether `deployment` is an orphan: its controller owner is a MyResource that `lookup` does not
// find, or finds with another UID. Deployments without a controller owner are not orphans: the
// MyResource their label names adopts them, and one without such a MyResource is left to its user.
std::optional<Orphan> orphan_of(const kube::Object& deployment, const MyResourceLookup& lookup);

// The orphans among `deployments` (orphan_of of each).
std::vector<Orphan> find_orphans(const std::vector<std::shared_ptr<const kube::Object>>& deployments,
                                 const MyResourceLookup& lookup);

}  // namespace myop::myresource
