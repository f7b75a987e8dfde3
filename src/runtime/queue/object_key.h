#pragma once
// The identity of a reconcile request: namespace and name. The namespace is also the tenant the
// work queue takes turns between; cluster-scoped objects have an empty namespace.
#include <cstddef>
#include <functional>
#include <string>

namespace myop::runtime {

struct ObjectKey {
  std::string namespace_name;
  std::string name;

  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the comparison a defaulted <=> returns
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;

  std::string to_string() const { return namespace_name.empty() ? name : namespace_name + "/" + name; }
};

struct ObjectKeyHash {
  std::size_t operator()(const ObjectKey& key) const noexcept {
    std::size_t seed = std::hash<std::string>{}(key.namespace_name);
    return seed ^ (std::hash<std::string>{}(key.name) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  }
};

}  // namespace myop::runtime
