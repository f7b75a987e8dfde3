#include "kube/resource.h"

#include "base/text.h"

namespace myop::kube {

std::string encode_path_segment(std::string_view segment) { return base::percent_encode(segment, ":@"); }

std::string group_version_path(std::string_view group, std::string_view version) {
  std::string path = group.empty() ? "/api/" : "/apis/" + std::string(group) + "/";
  path += version;
  return path;
}

std::string collection_path(const ResourceType& type, std::string_view namespace_name) {
  std::string path = group_version_path(type.group, type.version);
  if (type.namespaced && !namespace_name.empty())
    path += "/namespaces/" + encode_path_segment(namespace_name);
  path += "/" + type.resource;
  return path;
}

std::string object_path(const ResourceType& type, std::string_view namespace_name, std::string_view name,
                        std::string_view subresource) {
  std::string path = collection_path(type, namespace_name) + "/" + encode_path_segment(name);
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

}  // namespace myop::kube
