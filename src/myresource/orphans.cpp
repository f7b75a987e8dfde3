#include "myresource/orphans.h"

#include "myresource/desired.h"
#include "myresource/types.h"

namespace myop::myresource {

std::optional<Orphan> orphan_of(const kube::Object& deployment, const MyResourceLookup& lookup) {
  const kube::ObjectView view = deployment.view();
  if (view.label(kManagedByLabel) != kManagedByValue) return std::nullopt;
  if (view.is_being_deleted()) return std::nullopt;
  const auto owner = view.controller_owner();
  if (!owner || owner->kind != kKind || owner->api_version.rfind(std::string(kGroup) + "/", 0) != 0)
    return std::nullopt;
  const auto myresource = lookup({std::string(view.namespace_name()), owner->name});
  std::string reason;
  if (!myresource) {
    reason = "its owner MyResource " + owner->name + " no longer exists";
  } else if (myresource->uid() != owner->uid) {
    reason = "its owner MyResource " + owner->name + " (uid " + owner->uid +
             ") was replaced by another object of the same name";
  } else {
    return std::nullopt;
  }
  return Orphan{std::string(view.namespace_name()), std::string(view.name()), std::string(view.uid()),
                "Deployment " + std::string(view.name()) + " is orphaned: " + reason};
}

std::vector<Orphan> find_orphans(const std::vector<std::shared_ptr<const kube::Object>>& deployments,
                                 const MyResourceLookup& lookup) {
  std::vector<Orphan> orphans;
  for (const auto& deployment : deployments) {
    if (auto orphan = orphan_of(*deployment, lookup)) orphans.push_back(std::move(*orphan));
  }
  return orphans;
}

}  // namespace myop::myresource
