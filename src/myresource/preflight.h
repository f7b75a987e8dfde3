#pragma once
// Checks made once before the operator starts, so that a missing CRD or a missing RBAC grant fails
// at once with a message a person can act on, instead of as a cache that never syncs.
#include <string>
#include <vector>

#include "kube/client.h"

namespace myop::myresource {

// Passes when the MyResource API is served and MyResources and Deployments can be listed in every
// namespace of `namespaces` (empty: cluster-wide). Else fails with the API error that said no (its
// reason, code and causes kept), its message rewritten to say what is wrong and how to fix it. A 500
// on the MyResource list (a stored object the API server cannot convert yet, since the webhook that
// converts it is this operator's) passes.
kube::Result<void> preflight(kube::Client& client, const std::vector<std::string>& namespaces);

}  // namespace myop::myresource
