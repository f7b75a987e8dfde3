#include "myresource/preflight.h"

#include <string>
#include <utility>

#include "kube/resource.h"
#include "myresource/types.h"

namespace myop::myresource {

namespace {

// The API error, its message replaced by what it means here.
kube::Error explained(kube::Error error, std::string message) {
  error.message = std::move(message);
  return error;
}

}  // namespace

kube::Result<void> preflight(kube::Client& client, const std::vector<std::string>& namespaces) {
  auto discovered = client.discover(kGroup, kVersion);
  if (!discovered) {
    kube::Error error = std::move(discovered).error();
    if (error.reason == kube::Reason::NotFound) {
      return explained(std::move(error), "the MyResource CRD (myresources.myorg.io, version " +
                                             std::string(kVersion) +
                                             ") is not installed; install it with `kubectl apply -f "
                                             "config/crd/` or the Helm chart, then start the operator again");
    }
    std::string message =
        "cannot reach the API server to discover " + std::string(kApiVersion) + ": " + error.message;
    return explained(std::move(error), std::move(message));
  }
  kube::ListOptions options;
  options.limit = 1;
  const std::vector<std::string> scopes = namespaces.empty() ? std::vector<std::string>{""} : namespaces;
  for (const std::string& scope : scopes) {
    const std::string where = scope.empty() ? "all namespaces" : "namespace " + scope;
    for (const auto& type : {myresource_type(), kube::resources::deployments()}) {
      auto listed = client.list(type, scope, options);
      if (!listed && listed.error().reason == kube::Reason::Forbidden) {
        std::string message =
            "RBAC forbids listing " + type.resource + " in " + where + ": " + listed.error().message +
            " (grant the operator's ServiceAccount the rules in config/rbac, or install the "
            "Helm chart)";
        return explained(std::move(listed).error(), std::move(message));
      }
      // A 500 on MyResources is what the API server answers while it cannot convert a stored object,
      // and the conversion webhook is this operator, which serves it only once it runs: not a reason
      // to stop (a restart after an upgrade to v1beta1 storage would never get past this). The
      // informers list again with backoff and readiness reports them.
      if (!listed && listed.error().reason == kube::Reason::InternalError && type.resource == kPlural)
        continue;
      if (!listed) {
        std::string message =
            "listing " + type.resource + " in " + where + " failed: " + listed.error().message;
        return explained(std::move(listed).error(), std::move(message));
      }
    }
  }
  return {};
}

}  // namespace myop::myresource
