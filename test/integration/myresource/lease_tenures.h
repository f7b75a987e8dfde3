// Who held which Lease when, rebuilt from the API server's audit log, and the object writes made
// outside their writer's tenure: the overlap check of the sharding tests (shard slot Leases) and of
// the fault tests (the leader Lease).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "myresource/operator_process.h"

namespace myop::testing {

// One user's hold of one Lease, as audit timestamps (RFC 3339 with microseconds: compare as text).
struct Tenure {
  std::string user;
  std::string from;   // the taking write's answer (completed)
  std::string until;  // the next holder's taking write's arrival (received); "" while held
};

// What a write by the Lease's holder means.
enum class HolderWrite {
  Releases,  // it frees the Lease (shard slot Leases are never renewed: every write takes or frees)
  Renews,    // it keeps it (the leader Lease, renewed every retry period)
};

// A request of the audit log and the user who made it.
using UserEntry = std::pair<std::string, AuditEntry>;

inline bool is_object_write(const AuditEntry& entry) {
  return (entry.verb == "create" || entry.verb == "update" || entry.verb == "patch" ||
          entry.verb == "delete") &&
         (entry.resource == "myresources" || entry.resource == "deployments");
}

// The tenures of each Lease, keyed by key_of(Lease name) ("" skips that Lease), from the successful
// creates and updates among `lease_writes`: a user's write of a Lease it does not hold takes it, from
// the answer's time; the former holder's tenure ends when that write arrived.
inline std::map<std::string, std::vector<Tenure>> lease_tenures(
    std::vector<UserEntry> lease_writes, const std::function<std::string(const std::string&)>& key_of,
    HolderWrite holder_write) {
  std::sort(lease_writes.begin(), lease_writes.end(),
            [](const auto& a, const auto& b) { return a.second.completed < b.second.completed; });
  std::map<std::string, std::vector<Tenure>> tenures;
  std::map<std::string, std::string> holder;
  for (const auto& [user, entry] : lease_writes) {
    if (entry.resource != "leases" || (entry.verb != "create" && entry.verb != "update") || entry.code >= 300)
      continue;
    const std::string key = key_of(entry.name);
    if (key.empty()) continue;
    auto& list = tenures[key];
    if (holder[key] == user) {
      if (holder_write == HolderWrite::Releases) {
        list.back().until = entry.received;
        holder[key].clear();
      }
    } else {
      if (!holder[key].empty()) list.back().until = entry.received;  // taken over
      list.push_back({user, entry.completed, ""});
      holder[key] = user;
    }
  }
  return tenures;
}

// The object writes that are not inside one of their writer's tenures of the Lease
// key_of_write(write) names, one line each.
inline std::vector<std::string> writes_outside_tenures(
    const std::map<std::string, std::vector<Tenure>>& tenures, const std::vector<UserEntry>& object_writes,
    const std::function<std::string(const AuditEntry&)>& key_of_write) {
  std::vector<std::string> violations;
  for (const auto& [user, entry] : object_writes) {
    const std::string key = key_of_write(entry);
    bool inside = false;
    if (auto found = tenures.find(key); found != tenures.end()) {
      for (const auto& tenure : found->second) {
        if (tenure.user == user && tenure.from <= entry.received &&
            (tenure.until.empty() || entry.completed <= tenure.until)) {
          inside = true;
          break;
        }
      }
    }
    if (!inside) {
      violations.push_back(user + " " + entry.describe() + " at " + entry.received + ".." + entry.completed +
                           " (Lease " + key + ")");
    }
  }
  return violations;
}

}  // namespace myop::testing
