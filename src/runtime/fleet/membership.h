// Which member clusters are engaged, decided from the kubeconfig Secrets the provider sees.
//
// A Secret added with a usable kubeconfig engages its cluster under a new ClusterId; a Secret whose
// kubeconfig changed (a rotation) disengages the old id and engages a new one, so that nothing
// queued or fenced for the old credentials outlives them; a deleted Secret disengages its cluster.
// A Secret that cannot be used (read_kubeconfig_secret's error) is refused: its cluster alone, and
// one that was engaged with earlier bytes is disengaged (its new credentials may be a revocation of
// the old). The same bytes seen again change nothing, so a resync or a relist is quiet.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object.h"
#include "runtime/fleet/kubeconfig_secret.h"
#include "runtime/queue/object_key.h"

namespace myop::runtime::fleet {

struct MembershipChange {
  enum class Kind {
    engage,     // start the cluster `id` with `source`
    disengage,  // stop the cluster `id`: its informers, writes and queued work
    refuse,     // the Secret `name` cannot be used: `problem` says why
  };
  Kind kind = Kind::engage;
  std::string name;
  ClusterId id = kLocalCluster;        // engage, disengage
  std::optional<MemberSource> source;  // engage
  std::string problem;                 // refuse
};

class Membership {
 public:
  // A Secret added or updated (as the API server returns it): the changes, in the order to apply them.
  std::vector<MembershipChange> observe(const kube::ObjectView& secret);
  // Any source of members (a ClusterProfile, runtime/fleet/cluster_profile.h): `digest` of what
  // describes it (equal digests: nothing changed, `read` is not called), `read` its member.
  std::vector<MembershipChange> observe(const std::string& name, const std::string& digest,
                                        const std::function<kube::Result<MemberSource>()>& read);
  // The Secret (or other source) `name` was deleted.
  std::vector<MembershipChange> remove(std::string_view name);

  // The engaged cluster of that name, if any.
  std::optional<ClusterId> engaged(std::string_view name) const;
  // The name of an engaged cluster, if `id` is one.
  std::optional<std::string> name_of(ClusterId id) const;
  std::size_t engaged_count() const;
  // Secrets seen whose kubeconfig cannot be used (nothing engaged for them).
  std::size_t refused_count() const;

 private:
  struct Member {
    std::string digest;            // of the bytes last seen, usable or not ("" when unreadable)
    ClusterId id = kLocalCluster;  // kLocalCluster: refused, nothing engaged
  };
  std::map<std::string, Member, std::less<>> members_;
  ClusterId next_id_ = kLocalCluster + 1;
};

}  // namespace myop::runtime::fleet
