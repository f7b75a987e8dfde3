#include "myresource/orphans.h"

#include "myresource/desired.h"
#include "myresource/types.h"

namespace myop::myresource {

std::vector<Orphan> find_orphans(const std::vector<std::shared_ptr<const kube::Object>>& deployments,
                                 const MyResourceLookup& lookup) {
  std::vector<Orphan> orphans;
  for (const auto& deployment : deployments) {
    const kube::ObjectView view = deployment->view();
    if (view.label(kManagedByLabel) != kManagedByValue) continue;
    if (view.is_being_deleted()) continue;
    const auto owner = view.controller_owner();
    if (!owner || owner->kind != kKind || owner->api_version.rfind(std::string(kGroup) + "/", 0) != 0)
      continue;
    const auto myresource = lookup({std::string(view.namespace_name()), owner->name});
    std::string reason;
    if (!myresource) {
      reason = "its owner MyResource " + owner->name + " no longer exists";
    } else if (myresource->uid() != owner->uid) {
      reason = "its owner MyResource " + owner->name + " (uid " + owner->uid +
               ") was replaced by another object of the same name";
    } else {
      continue;
    }
    orphans.push_back({std::string(view.namespace_name()), std::string(view.name()), std::string(view.uid()),
                       "Deployment " + std::string(view.name()) + " is orphaned: " + reason});
  }
  return orphans;
}

}  // namespace myop::myresource
