#pragma once
// The rule every per-cluster metric follows (docs/multicluster.md, "Metrics and logs"): the operator's
// own cluster's series carry the base labels only, as without a fleet; a member's add
// cluster="<its name>". A member's series are made on first use and kept by name after it leaves (as
// counters are), so a member engaged again goes on counting where it stopped.
#include <prometheus/labels.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace myop::runtime {

// The series of member `cluster` in `members`, made by `make` from `labels` plus cluster="<cluster>"
// the first time it is asked for. References stay valid: members are never erased. Not locked.
template <typename Series, typename Make>
Series& member_series(std::map<std::string, Series, std::less<>>& members, const prometheus::Labels& labels,
                      std::string_view cluster, Make&& make) {
  auto position = members.find(cluster);
  if (position == members.end()) {
    prometheus::Labels with_cluster = labels;
    with_cluster.emplace("cluster", std::string(cluster));
    position = members.emplace(std::string(cluster), std::forward<Make>(make)(with_cluster)).first;
  }
  return position->second;
}

}  // namespace myop::runtime
