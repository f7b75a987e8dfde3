#pragma once
// A member cluster of a fleet test (docs/multicluster.md): a control plane of its own, etcd and
// kube-apiserver only (`hack/testenv up --api-only --audit`: nothing but the operator acts in it, and it
// starts in seconds), with the fixture's MyResource CRD (conversion by the fixture's webhook) and
// config/fleet/member-rbac.yaml bound to the user my-operator-fleet: the identity of the kubeconfig a
// hub Secret carries for it, so the member's audit log counts exactly the operator's requests there.
// Stopped when it goes.
#include <string>

#include "support/testenv.h"

namespace myop::testing {

// The user of the kubeconfig that members' Secrets carry.
inline constexpr const char* kFleetMemberUser = "my-operator-fleet";

class MemberCluster {
 public:
  // Starts it; FAILs the test with the script's output when it cannot.
  explicit MemberCluster(std::string name);
  ~MemberCluster();
  MemberCluster(const MemberCluster&) = delete;
  MemberCluster& operator=(const MemberCluster&) = delete;

  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  // An admin (system:masters) kubeconfig, for the test's own reads and writes.
  std::string admin_kubeconfig() const { return dir_ + "/kubeconfig"; }
  // The kubeconfig of kFleetMemberUser, self-contained (certificate data, no file paths).
  const std::string& operator_kubeconfig() const { return operator_kubeconfig_; }
  std::string audit_log_path() const { return dir_ + "/audit.log"; }

  testenv::CommandResult kubectl(const std::string& args) const;
  std::string kubectl_or_fail(const std::string& args) const;
  testenv::CommandResult kubectl_apply(const std::string& manifest) const;

  // The Secret that names this member to the operator: `name()` in `hub_namespace` of the fixture's
  // control plane, labelled sigs.k8s.io/multicluster-runtime-kubeconfig, with `kubeconfig` (default:
  // operator_kubeconfig()) under the key kubeconfig; created or replaced.
  void put_secret(const std::string& hub_namespace, const std::string& kubeconfig = "") const;
  // The same for any name and kubeconfig file (e.g. one the operator must refuse).
  static void put_secret_as(const std::string& hub_namespace, const std::string& name,
                            const std::string& kubeconfig);
  void delete_secret(const std::string& hub_namespace) const;

  // SIGSTOP / SIGCONT of its kube-apiserver: connections stay open, nothing answers.
  void pause_apiserver() const;
  void resume_apiserver() const;

 private:
  std::string name_;
  std::string dir_;
  std::string operator_kubeconfig_;
};

}  // namespace myop::testing
