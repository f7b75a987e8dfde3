// Which REST collection an object lives in, and the URL paths built from it.
//
//   core group:  /api/v1/namespaces/{ns}/configmaps/{name}
//   named group: /apis/myorg.io/v1alpha1/namespaces/{ns}/myresources/{name}/status
//   cluster:     /apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}
#pragma once

#include <string>
#include <string_view>

namespace myop::kube {

struct ResourceType {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "configmaps"
  bool namespaced = true;
  std::string kind;  // "ConfigMap": used for server-side apply bodies and messages; may be empty

  // "v1" or "apps/v1": the apiVersion field of objects of this type.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "configmaps" or "deployments.apps": kubectl's name of the collection.
  std::string qualified_resource() const { return group.empty() ? resource : resource + "." + group; }
};

// "/api/v1" or "/apis/apps/v1".
std::string group_version_path(std::string_view group, std::string_view version);

// The collection: namespaced types with an empty namespace give the all-namespaces collection.
std::string collection_path(const ResourceType& type, std::string_view namespace_name);

// One object, optionally a subresource ("status", "scale"). Name and namespace are percent-encoded.
std::string object_path(const ResourceType& type, std::string_view namespace_name, std::string_view name,
                        std::string_view subresource = {});

// Percent-encodes one path segment (base::percent_encode, keeping ':' and '@').
std::string encode_path_segment(std::string_view segment);

// Types the operator itself talks to.
namespace resources {
inline ResourceType config_maps() { return {"", "v1", "configmaps", true, "ConfigMap"}; }
inline ResourceType secrets() { return {"", "v1", "secrets", true, "Secret"}; }
inline ResourceType namespaces() { return {"", "v1", "namespaces", false, "Namespace"}; }
inline ResourceType service_accounts() { return {"", "v1", "serviceaccounts", true, "ServiceAccount"}; }
inline ResourceType pods() { return {"", "v1", "pods", true, "Pod"}; }
inline ResourceType deployments() { return {"apps", "v1", "deployments", true, "Deployment"}; }
inline ResourceType leases() { return {"coordination.k8s.io", "v1", "leases", true, "Lease"}; }
inline ResourceType events() { return {"events.k8s.io", "v1", "events", true, "Event"}; }
inline ResourceType custom_resource_definitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false, "CustomResourceDefinition"};
}
}  // namespace resources

}  // namespace myop::kube
