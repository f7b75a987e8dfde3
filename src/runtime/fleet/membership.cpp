#include "runtime/fleet/membership.h"

#include <utility>

namespace myop::runtime::fleet {

std::vector<MembershipChange> Membership::observe(const kube::ObjectView& secret) {
  // Usable or not: a refused Secret seen again unchanged (a resync) is not refused again, and a fixed
  // one is read again.
  return observe(std::string(secret.name()), kubeconfig_digest(secret),
                 [&secret] { return read_kubeconfig_secret(secret); });
}

std::vector<MembershipChange> Membership::observe(const std::string& name, const std::string& digest,
                                                  const std::function<kube::Result<MemberSource>()>& read) {
  std::vector<MembershipChange> changes;
  auto [position, added] = members_.try_emplace(name);
  Member& member = position->second;
  if (!added && member.digest == digest) return changes;
  member.digest = digest;
  if (member.id != kLocalCluster) {
    changes.push_back({MembershipChange::Kind::disengage, name, member.id, std::nullopt, {}});
    member.id = kLocalCluster;
  }
  auto source = read();
  if (!source) {
    changes.push_back({MembershipChange::Kind::refuse, name, kLocalCluster, std::nullopt,
                       std::move(source).error().message});
    return changes;
  }
  member.id = next_id_++;
  changes.push_back({MembershipChange::Kind::engage, name, member.id, std::move(source).value(), {}});
  return changes;
}

std::vector<MembershipChange> Membership::remove(std::string_view name) {
  std::vector<MembershipChange> changes;
  auto position = members_.find(name);
  if (position == members_.end()) return changes;
  if (position->second.id != kLocalCluster) {
    changes.push_back(
        {MembershipChange::Kind::disengage, std::string(name), position->second.id, std::nullopt, {}});
  }
  members_.erase(position);
  return changes;
}

std::optional<ClusterId> Membership::engaged(std::string_view name) const {
  auto position = members_.find(name);
  if (position == members_.end() || position->second.id == kLocalCluster) return std::nullopt;
  return position->second.id;
}

std::optional<std::string> Membership::name_of(ClusterId id) const {
  if (id == kLocalCluster) return std::nullopt;
  for (const auto& [name, member] : members_) {
    if (member.id == id) return name;
  }
  return std::nullopt;
}

std::size_t Membership::engaged_count() const {
  std::size_t count = 0;
  for (const auto& [name, member] : members_) count += member.id != kLocalCluster ? 1 : 0;
  return count;
}

std::size_t Membership::refused_count() const { return members_.size() - engaged_count(); }

}  // namespace myop::runtime::fleet
