#pragma once
// Access to the real control plane the integration tests run against: the one the
// ctest fixture started with hack/testenv, or the cluster of $KUBECONFIG.

#include <string>
#include <utility>
#include <vector>

namespace myop::testenv {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  bool ok() const { return exit_code == 0; }
};

// Runs a shell command; never throws.
CommandResult run(const std::string& command);

// The admin kubeconfig (a client certificate in system:masters).
std::string kubeconfig_path();

// `kubectl --kubeconfig <admin> <args>`.
CommandResult kubectl(const std::string& args);

// Like kubectl(), but FAILs the current test with the output when kubectl fails.
std::string kubectl_or_fail(const std::string& args);

// Applies a manifest given as text (`kubectl apply -f -`).
CommandResult kubectl_apply(const std::string& manifest, const std::string& extra_args = "");

// Creates a namespace with a unique name starting with prefix; deleted when the
// returned guard goes away.
class ScopedNamespace {
 public:
  explicit ScopedNamespace(const std::string& prefix);
  ~ScopedNamespace();
  ScopedNamespace(const ScopedNamespace&) = delete;
  ScopedNamespace& operator=(const ScopedNamespace&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// Whether this test run started the control plane itself (and so may stop, restart
// and compact parts of it). False when the tests run against $KUBECONFIG's cluster.
bool owns_control_plane();

// The hack/testenv state directory of the control plane (requires owns_control_plane()).
std::string state_dir();

// The cluster CA certificate file (requires owns_control_plane()).
std::string ca_path();

// The MyResource CRD this run applies: config/crd's with its conversion webhook's clientConfig set to
// the fixture's webhook (`my-operator --webhook-only` on loopback, with url and caBundle; see
// hack/test-fixture.sh). Re-applying config/crd's own file would point the API server at a Service it
// cannot reach. FAILs when the fixture did not write it.
std::string crd_manifest();
// `kubectl apply --server-side --force-conflicts` of crd_manifest() and the annotations policy, then
// waits until the CRD is Established; FAILs on error.
void apply_crd();
// The fixture's webhook: its URL and its CA (base64 PEM), e.g. for the chart's webhook.url and
// webhook.caBundle.
std::string webhook_url();
std::string webhook_ca_bundle();
// The file of that CA (PEM), e.g. for hack/lib/webhook_client_config.py.
std::string webhook_ca_path();

// The API server URL, e.g. https://127.0.0.1:34567 (from the kubeconfig).
std::string server_url();

// Stop / start / restart one component (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok); start and restart wait until it is ready again. FAIL on error.
void stop_component(const std::string& component);
void start_component(const std::string& component);
void restart_component(const std::string& component);
inline void stop_apiserver() { stop_component("kube-apiserver"); }
inline void start_apiserver() { start_component("kube-apiserver"); }
inline void restart_apiserver() { restart_component("kube-apiserver"); }

// One component stopped for a scope, started again at its end (while unwinding too, without a FAIL
// there): e.g. kube-controller-manager, for a cluster whose garbage collector is down.
class ComponentStopped {
 public:
  explicit ComponentStopped(std::string component);
  ~ComponentStopped();
  ComponentStopped(const ComponentStopped&) = delete;
  ComponentStopped& operator=(const ComponentStopped&) = delete;

 private:
  std::string component_;
};

// Compacts etcd to its current revision; returns that revision.
long long compact_etcd();

// What etcd stores under a key prefix (e.g. "/registry/myorg.io/myresources/<ns>/"), key -> the bytes
// the API server wrote (a custom resource's JSON, in its storage version).
std::vector<std::pair<std::string, std::string>> etcd_values(const std::string& prefix);

// A client certificate for `user` in `groups`, signed by the cluster CA.
struct ClientCertificate {
  std::string certificate_path;
  std::string key_path;
};
ClientCertificate issue_client_certificate(const std::string& user,
                                           const std::vector<std::string>& groups = {});

// A kubeconfig for a new client-certificate user (no RBAC rights unless granted).
std::string kubeconfig_for_user(const std::string& user, const std::vector<std::string>& groups = {});

// A copy of `kubeconfig` (next to it) whose server is `server` instead of server_url(), e.g. a fault
// proxy in front of the API server (support/fault_proxy.h); returns its path.
std::string kubeconfig_with_server(const std::string& kubeconfig, const std::string& server);

// The whole content of the file at `path`; FAILs the current test when it cannot be read.
std::string read_file(const std::string& path);

// The API server's audit log (JSON lines; requires owns_control_plane()).
std::string audit_log_path();

// Paths of the source tree and of the build tree.
std::string source_dir();
std::string binary_dir();

// The path of `program` of a Go tool pinned by hack/tools (`tool` as hack/build-tools.sh names it),
// built on first use; FAILs with the script's output when it cannot be built.
std::string tool_binary(const std::string& tool, const std::string& program);

}  // namespace myop::testenv
