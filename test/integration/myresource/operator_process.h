// The operator as a user runs it, for the MyResource integration tests: the built my-operator
// binary, started as a process of its own against the real control plane, under a
// client-certificate user of its own that holds only config/rbac's ClusterRole. Because the user
// is the test's own, the API server's audit log counts exactly this operator's requests.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kube/resource.h"
#include "support/child_process.h"

namespace myop::testing {

struct OperatorOptions {
  // The client-certificate user the operator runs as (unique per test, so the audit log can tell
  // its requests apart). config/rbac's ClusterRole my-operator-manager is bound to it.
  std::string user;
  // --namespaces; tests keep their operator inside their own namespaces.
  std::vector<std::string> namespaces;
  // POD_NAMESPACE: where the feature-flag ConfigMap is read from.
  std::string pod_namespace;
  // Flags added after the defaults (e.g. "--resync-period", "30s").
  std::vector<std::string> extra_args;
  // When set, the operator runs with this kubeconfig (e.g. a ServiceAccount token of the Helm
  // chart) and the test grants nothing: `user` is then only the audit log's user name.
  std::string kubeconfig;
  // Run the binary through this command (e.g. strace and its flags); empty runs it directly.
  std::vector<std::string> command_prefix;
  // More config/rbac files whose ClusterRole is applied and bound to the user too, e.g.
  // "metrics_auth_role.yaml" for --metrics-secure. The bindings go with the process.
  std::vector<std::string> extra_cluster_role_files;
  // More config/rbac files of a Role, applied in pod_namespace (which must be set) and bound to the
  // user there, e.g. "webhook_secret_role.yaml".
  std::vector<std::string> extra_role_files;
  // The program under the build folder: my-operator, or a controller of examples/; or an absolute path
  // (the previous release's operator, hack/previous-release.sh).
  std::string binary = "my-operator";
  // When set, the operator reaches the API server at this URL instead (a FaultProxy's url()): its
  // kubeconfig is the user's with this server, same CA and credentials.
  std::string server;
};

class OperatorProcess {
 public:
  // Grants the RBAC and writes the user's kubeconfig; does not start the process.
  explicit OperatorProcess(OperatorOptions options);
  ~OperatorProcess();  // stop(), and removes the ClusterRoleBinding
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Starts the binary and waits (60 s) until /readyz answers 200; FAILs with the log otherwise.
  void start();
  // SIGTERM, then SIGKILL after 30 s; waits for the exit. No-op when not running.
  void stop();
  // SIGKILL at once, as a crash or an evicted pod would end it.
  void kill();
  // Sends `signal` to the process group (e.g. SIGSTOP / SIGCONT to pause it as a stalled node would).
  void signal(int signal);
  bool running();

  // GET /readyz of the running process: the HTTP status (0 when it cannot be reached) and the body.
  struct Probe {
    int status = 0;
    std::string body;
  };
  Probe readyz() const;
  // The metrics text (GET /metrics); "" when it cannot be read.
  std::string metrics() const;
  // The value of one sample line of /metrics, e.g. `myoperator_orphans_total{action="deleted"}`;
  // -1 when the line is absent.
  double metric(const std::string& sample) const;
  // What the running process has done so far, from its /metrics (sums over controllers and queues).
  struct Work {
    bool read = false;      // false when /metrics could not be read
    double queue_adds = 0;  // workqueue_adds_total
    double reconciles = 0;  // controller_runtime_reconcile_total, every result
    double queued = 0;      // workqueue_depth: keys ready for a worker
    double in_flight = 0;   // controller_runtime_active_workers: reconciles running
    bool idle() const { return read && queued == 0 && in_flight == 0; }
    std::string describe() const;
  };
  Work work() const;
  // Waits until the operator has settled: no key queued, no reconcile running, and for `quiet` on end
  // nothing added to its queues, nothing reconciled and no write of its user in the audit log (as
  // audit_writes counts them: Events and Leases, its report and heartbeat, which trail on a thread
  // of their own, are not). The observable a test waits on before it counts writes, or before it
  // checks that something did not happen: whatever the operator was going to do about what the test
  // did, it has done. `limit` only turns an operator that never settles (a write or retry storm) into
  // a failure: FAILs then, with its counters and log. A key waiting out a requeueAfter is not seen
  // (the queue shows no delayed keys); a reconcile that requeues itself more often than `quiet` never
  // settles.
  void wait_until_settled(std::chrono::milliseconds quiet = std::chrono::seconds(3),
                          std::chrono::milliseconds limit = std::chrono::seconds(180));
  // Waits (at most `limit`, then FAILs) until the running process has finished `count` reconciles
  // in all (controller_runtime_reconcile_total; it counts from 0 at every start). A witness that
  // something the test cannot see (a resync, a retry, an initial list) did run.
  void wait_for_reconciles(double count, std::chrono::milliseconds limit = std::chrono::seconds(120));
  // The last lines of the operator's log (all starts, appended).
  std::string log_tail(std::size_t lines = 60) const;
  const std::string& user() const { return options_.user; }
  const std::string& log_path() const { return log_path_; }
  // The /metrics port of the running (or last) process.
  unsigned short metrics_port() const { return metrics_port_; }
  // The /healthz and /readyz port of the running (or last) process.
  unsigned short probe_port() const { return probe_port_; }
  // The process id of the running (or last) process (its command_prefix's, if any).
  pid_t pid() const { return process_.pid(); }

 private:
  OperatorOptions options_;
  std::string kubeconfig_;
  std::string log_path_;
  ChildProcess process_;
  unsigned short probe_port_ = 0;
  unsigned short metrics_port_ = 0;
  std::vector<std::string> extra_bindings_;
};

// The sum of every sample of `name` in a /metrics text whose labels contain each of `labels` (e.g.
// code="<error>"); 0 when there is none.
double metric_sum(const std::string& metrics, const std::string& name,
                  const std::vector<std::string>& labels = {});
double metric_sum(const std::string& metrics, const std::string& name, const std::string& label);

// One request of the API server's audit log (stage ResponseComplete).
struct AuditEntry {
  std::string verb;         // get, list, watch, create, update, patch, delete, ...
  std::string resource;     // deployments, myresources, ...
  std::string subresource;  // status, ...
  std::string namespace_;
  std::string name;
  int code = 0;
  std::string request_uri;  // path and query, as sent
  std::string user_agent;
  // requestReceivedTimestamp and stageTimestamp (RFC 3339 with microseconds: compare as text).
  std::string received;
  std::string completed;
  std::string describe() const;
};

// The audit log's current length, to count only what follows. `log_path` "": the fixture's control
// plane's; else another's (a fleet member's, support/member_cluster.h), as for the two below.
std::size_t audit_mark(const std::string& log_path = "");
// `user`'s requests logged after `mark`. The log is written before the response is sent
// (blocking mode), so a request the test has seen answered is in it.
std::vector<AuditEntry> audit_entries(const std::string& user, std::size_t mark = 0,
                                      const std::string& log_path = "");
// The writes among them (create, update, patch, delete, deletecollection), Events and Leases
// excepted: those are the operator's report and heartbeat, not changes to the cluster.
std::vector<AuditEntry> audit_writes(const std::string& user, std::size_t mark = 0,
                                     const std::string& log_path = "");
std::string describe(const std::vector<AuditEntry>& entries);
// Those of audit_writes that wrote the Deployment `name` (in any namespace).
std::vector<AuditEntry> deployment_writes(const std::string& user, std::size_t mark, const std::string& name);
// `user`'s writes appended to the audit log since this was made, read as they come: each call reads
// only what was appended since the last, however long the log has grown.
class AuditTail {
 public:
  explicit AuditTail(std::string user);
  // Writes as audit_writes counts them (Events and Leases excepted).
  std::size_t writes();
  // Every create, update, patch and delete, Events and Leases included.
  std::size_t all_writes();

 private:
  void read();

  std::string user_;
  std::size_t offset_ = 0;
  std::string pending_;  // the start of a line not yet complete
  std::size_t writes_ = 0;
  std::size_t all_writes_ = 0;
};

// Waits until no write of `user` (every create, update, patch and delete, Events and Leases included)
// has reached the audit log for `quiet`: a process that was killed or paused has no write in flight
// any more. FAILs when they still come after `limit`.
void wait_until_audit_quiet(const std::string& user,
                            std::chrono::milliseconds quiet = std::chrono::seconds(2),
                            std::chrono::milliseconds limit = std::chrono::seconds(60));

// The MyResource collection in v1alpha1, the version users' manifests name (the operator works on
// v1beta1): the API server converts through the fixture's webhook.
kube::ResourceType myresource_v1alpha1_type();

// `count` MyResources app-0, app-1, ... of `namespace_` written as v1alpha1 (nginx:1.27.1, one
// replica), every tenth with a canary on 1.27.2: one multi-document manifest, as an old Git tree has.
std::string v1alpha1_fleet_manifest(const std::string& namespace_, int count);

// How many MyResources of `namespace_` etcd holds in each apiVersion (what the API server stored them
// as), e.g. {"myorg.io/v1beta1": 500}. Needs the fixture's control plane.
std::map<std::string, std::size_t> stored_api_versions(const std::string& namespace_);

// A 127.0.0.1 port nobody listens on now (bound to port 0, then released).
unsigned short free_port();

// Seconds from `start` to now (for the figures tests report).
double seconds_since(std::chrono::steady_clock::time_point start);

// Polls `condition` every 200 ms until it holds or `timeout` passes; returns whether it held.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// `kubectl get <resource> <name> -n <namespace> -o jsonpath=<path>`; "" when it fails.
std::string jsonpath(const std::string& resource, const std::string& namespace_, const std::string& name,
                     const std::string& path);

// A MyResource manifest with the given spec fields (YAML lines under `spec:`, indented by 2).
std::string myresource_manifest(const std::string& namespace_, const std::string& name,
                                const std::string& image, int replicas = 1,
                                const std::string& extra_spec = "", const std::string& annotations = "");

// Canary annotations as myresource_manifest() takes them (indented under metadata.annotations), with
// an optional myorg.io/features override.
std::string canary_annotations(const std::string& target, const std::string& features = "");

// Whether the MyResource is Ready=True with status.observedGeneration == metadata.generation.
bool myresource_ready(const std::string& namespace_, const std::string& name);
// The reason of one of its conditions ("" when absent).
std::string condition_reason(const std::string& namespace_, const std::string& name, const std::string& type);
std::string condition_status(const std::string& namespace_, const std::string& name, const std::string& type);

}  // namespace myop::testing

namespace myop::testing {

// The events.k8s.io/v1 Events of a namespace about one object, one line each:
// "<type> <reason> <note>".
std::vector<std::string> events_about(const std::string& namespace_, const std::string& kind,
                                      const std::string& name);
// Whether one of them has this type (Normal, Warning) and reason.
bool has_event(const std::string& namespace_, const std::string& kind, const std::string& name,
               const std::string& type, const std::string& reason);
std::string describe(const std::vector<std::string>& lines);

// Creates or replaces the feature-flag ConfigMap (docs/design.md "Feature flags") in `namespace_`
// with exactly `data`; FAILs when kubectl does.
void set_feature_flags(const std::string& namespace_,
                       const std::vector<std::pair<std::string, std::string>>& data,
                       const std::string& name = "my-operator-config");

// Applies a ClusterRole of config/rbac under the name "myop-test-<its name>" and returns that name:
// a Helm release of the chart on the same control plane (hack/e2e.sh) owns the real names, and
// Helm refuses to install over objects it did not create.
std::string apply_test_cluster_role(const std::string& file);

// Whether the Deployment has `image` and has rolled: every replica updated and available, and the
// Deployment controller has observed its latest generation.
bool deployment_rolled(const std::string& namespace_, const std::string& name, const std::string& image);
// Whether `kubectl get` answers NotFound for the MyResource / the Deployment (not any other error).
bool myresource_gone(const std::string& namespace_, const std::string& name);
bool deployment_gone(const std::string& namespace_, const std::string& name);

}  // namespace myop::testing
