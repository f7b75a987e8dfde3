#include "support/member_cluster.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace myop::testing {
namespace {

std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

MemberCluster::MemberCluster(std::string name) : name_(std::move(name)) {
  dir_ = testenv::binary_dir() + "/fleet-members/" + name_;
  const auto up =
      testenv::run(testenv::source_dir() + "/hack/testenv up --api-only --audit --dir " + quote(dir_));
  if (!up.ok()) FAIL("cannot start member cluster " << name_ << ": " << up.output);
  // The fixture's CRD: its conversion webhook is the fixture's, on loopback, which this API server
  // reaches too.
  const auto crd = kubectl("apply --server-side --force-conflicts -f " + quote(testenv::crd_manifest()));
  if (!crd.ok()) FAIL("cannot install the MyResource CRD in member " << name_ << ": " << crd.output);
  kubectl_or_fail("wait --for=condition=Established crd/myresources.myorg.io --timeout=60s");
  const auto rbac = kubectl("apply -f " + quote(testenv::source_dir() + "/config/fleet/member-rbac.yaml"));
  if (!rbac.ok())
    FAIL("cannot apply config/fleet/member-rbac.yaml in member " << name_ << ": " << rbac.output);
  const auto kubeconfig = testenv::run(testenv::source_dir() + "/hack/testenv kubeconfig-for " +
                                       quote(kFleetMemberUser) + " --dir " + quote(dir_));
  if (!kubeconfig.ok()) FAIL("cannot write the member's operator kubeconfig: " << kubeconfig.output);
  operator_kubeconfig_ = trim(kubeconfig.output);
}

MemberCluster::~MemberCluster() {
  resume_apiserver();
  testenv::run(testenv::source_dir() + "/hack/testenv down --dir " + quote(dir_));
}

testenv::CommandResult MemberCluster::kubectl(const std::string& args) const {
  return testenv::run("kubectl --kubeconfig " + quote(admin_kubeconfig()) + " " + args);
}

std::string MemberCluster::kubectl_or_fail(const std::string& args) const {
  const auto result = kubectl(args);
  if (!result.ok()) FAIL("kubectl (member " << name_ << ") " << args << " failed: " << result.output);
  return result.output;
}

testenv::CommandResult MemberCluster::kubectl_apply(const std::string& manifest) const {
  const std::string path = dir_ + "/applied.yaml";
  std::ofstream(path) << manifest;
  return kubectl("apply -f " + quote(path));
}

void MemberCluster::put_secret(const std::string& hub_namespace, const std::string& kubeconfig) const {
  put_secret_as(hub_namespace, name_, kubeconfig.empty() ? operator_kubeconfig_ : kubeconfig);
}

void MemberCluster::put_secret_as(const std::string& hub_namespace, const std::string& name,
                                  const std::string& file) {
  const auto applied =
      testenv::run("kubectl --kubeconfig " + quote(testenv::kubeconfig_path()) + " create secret generic " +
                   quote(name) + " -n " + quote(hub_namespace) + " --from-file=kubeconfig=" + quote(file) +
                   " --dry-run=client -o yaml | kubectl --kubeconfig " + quote(testenv::kubeconfig_path()) +
                   " label --local -f - -o yaml " +
                   "sigs.k8s.io/multicluster-runtime-kubeconfig=true | kubectl --kubeconfig " +
                   quote(testenv::kubeconfig_path()) + " apply -f -");
  if (!applied.ok()) FAIL("cannot write the Secret of member " << name << ": " << applied.output);
}

void MemberCluster::delete_secret(const std::string& hub_namespace) const {
  testenv::kubectl_or_fail("delete secret " + quote(name_) + " -n " + quote(hub_namespace));
}

void MemberCluster::pause_apiserver() const {
  std::ifstream pid_file(dir_ + "/run/kube-apiserver.pid");
  pid_t pid = 0;
  if (!(pid_file >> pid) || pid <= 0) FAIL("no kube-apiserver pid for member " << name_);
  ::kill(pid, SIGSTOP);
}

void MemberCluster::resume_apiserver() const {
  std::ifstream pid_file(dir_ + "/run/kube-apiserver.pid");
  pid_t pid = 0;
  if (pid_file >> pid && pid > 0) ::kill(pid, SIGCONT);
}

}  // namespace myop::testing
