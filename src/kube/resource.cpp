#include "kube/resource.h"

namespace myop::kube {

std::string encode_path_segment(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(segment.size());
  for (unsigned char c : segment) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '-' || c == '.' || c == '_' || c == '~' || c == ':' || c == '@';
    if (unreserved) {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kHex[c >> 4];
      encoded += kHex[c & 0x0F];
    }
  }
  return encoded;
}

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
