#pragma once
// The identity of a reconcile request: namespace, name and the cluster the object lives in. The
// work queue takes turns between clusters, then between namespaces (tenants) within a cluster;
// cluster-scoped objects have an empty namespace.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace myop::runtime {

// A cluster of the fleet, as a number the process gives it (its name lives with the provider that
// engaged it); 0 is the cluster the operator runs in, the only one without a fleet. A number, not
// the name, so that a key stays as small as it was: keys are held several times per queued object.
using ClusterId = std::uint32_t;
inline constexpr ClusterId kLocalCluster = 0;

struct ObjectKey {
  std::string namespace_name;
  std::string name;
  ClusterId cluster = kLocalCluster;

  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the comparison a defaulted <=> returns
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;

  // namespace/name; a key of another cluster than the local one is prefixed with its number
  // ("#3:namespace/name"): callers that know the cluster's name print that instead.
  std::string to_string() const {
    std::string local = namespace_name.empty() ? name : namespace_name + "/" + name;
    return cluster == kLocalCluster ? local : "#" + std::to_string(cluster) + ":" + local;
  }
};

struct ObjectKeyHash {
  std::size_t operator()(const ObjectKey& key) const noexcept {
    std::size_t seed = std::hash<std::string>{}(key.namespace_name);
    seed ^= std::hash<std::string>{}(key.name) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    return seed ^ (std::hash<ClusterId>{}(key.cluster) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  }
};

}  // namespace myop::runtime
