#include "myresource/operator_process.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "myresource/types.h"
#include "support/testenv.h"

namespace myop::testing {
namespace {

std::string binding_name(const std::string& user) { return "myop-test-" + user; }

std::string string_member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto member = object.FindMember(name);
  return member != object.MemberEnd() && member->value.IsString() ? member->value.GetString() : std::string();
}

bool is_write(const std::string& verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" ||
         verb == "deletecollection";
}

// config/rbac's ClusterRole, renamed so that it never collides with a Helm release's
// my-operator-manager (hack/e2e.sh installs the chart on the same control plane).
constexpr const char* kManagerRole = "myop-test-operator-manager";

// `text` with its first `from` replaced by `to`; FAILs when `from` is missing.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) FAIL("expected '" << from << "' in:\n" << text);
  return text.replace(at, from.size(), to);
}

// The CRD, its annotations policy and config/rbac's ClusterRole, as a user installs them first.
void install_prerequisites() {
  static bool installed = false;
  if (installed) return;
  const std::string config = testenv::source_dir() + "/config";
  testenv::apply_crd();
  const auto applied =
      testenv::kubectl_apply(replaced(testenv::read_file(config + "/rbac/role.yaml"),
                                      "name: my-operator-manager", std::string("name: ") + kManagerRole));
  if (!applied.ok()) FAIL("cannot apply config/rbac/role.yaml: " << applied.output);
  installed = true;
}

}  // namespace

kube::ResourceType myresource_v1alpha1_type() {
  kube::ResourceType type = myresource::myresource_type();
  type.version = "v1alpha1";
  return type;
}

std::string v1alpha1_fleet_manifest(const std::string& namespace_, int count) {
  std::string manifest;
  for (int i = 0; i < count; ++i) {
    manifest += "---\napiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: app-" +
                std::to_string(i) + "\n  namespace: " + namespace_ + "\n";
    if (i % 10 == 0)
      manifest += "  annotations:\n    myorg.io/canary: \"true\"\n    myorg.io/targetVersion: \"1.27.2\"\n";
    manifest += "spec:\n  image: nginx:1.27.1\n  replicas: 1\n";
  }
  return manifest;
}

std::map<std::string, std::size_t> stored_api_versions(const std::string& namespace_) {
  std::map<std::string, std::size_t> counts;
  static const std::string kField = "\"apiVersion\":\"";
  for (const auto& [key, value] :
       testenv::etcd_values("/registry/myorg.io/myresources/" + namespace_ + "/")) {
    const auto at = value.find(kField);
    const auto end = at == std::string::npos ? at : value.find('"', at + kField.size());
    ++counts[end == std::string::npos ? "(no apiVersion) " + key
                                      : value.substr(at + kField.size(), end - at - kField.size())];
  }
  return counts;
}

unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    FAIL("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

OperatorProcess::OperatorProcess(OperatorOptions options) : options_(std::move(options)) {
  REQUIRE(!options_.user.empty());
  install_prerequisites();
  std::string log_name = options_.user;
  for (char& c : log_name)
    if (c == ':') c = '_';
  log_path_ = testenv::binary_dir() + "/testenv/operator-" + log_name + ".log";
  std::remove(log_path_.c_str());
  if (!options_.kubeconfig.empty()) {
    kubeconfig_ = options_.kubeconfig;
    return;
  }
  kubeconfig_ = testenv::kubeconfig_for_user(options_.user);
  if (!options_.server.empty()) kubeconfig_ = testenv::kubeconfig_with_server(kubeconfig_, options_.server);
  const std::string binding = binding_name(options_.user);
  testenv::kubectl("delete clusterrolebinding " + binding + " --ignore-not-found");
  testenv::kubectl_or_fail("create clusterrolebinding " + binding + " --clusterrole " + kManagerRole +
                           " --user " + options_.user);
  // Watching every namespace, the operator migrates stored MyResources (--migrate-storage): the
  // chart binds config/rbac's storage-migration ClusterRole then.
  std::vector<std::string> cluster_role_files = options_.extra_cluster_role_files;
  if (options_.namespaces.empty() && std::find(cluster_role_files.begin(), cluster_role_files.end(),
                                               "storage_migration_role.yaml") == cluster_role_files.end())
    cluster_role_files.push_back("storage_migration_role.yaml");
  for (const std::string& file : cluster_role_files) {
    const std::string role = apply_test_cluster_role(file);
    const std::string extra = binding + "-" + role;
    testenv::kubectl("delete clusterrolebinding " + extra + " --ignore-not-found");
    testenv::kubectl_or_fail("create clusterrolebinding " + extra + " --clusterrole " + role + " --user " +
                             options_.user);
    extra_bindings_.push_back(extra);
  }
  if (!options_.pod_namespace.empty()) {
    // config/rbac's leader-election Role (the Lease and the feature-flag ConfigMap), in the
    // operator's namespace, as the chart installs it in the release namespace.
    const std::string role =
        replaced(testenv::read_file(testenv::source_dir() + "/config/rbac/leader_election_role.yaml"),
                 "namespace: my-operator-system", "namespace: " + options_.pod_namespace);
    auto applied = testenv::kubectl_apply(role);
    if (!applied.ok()) FAIL("cannot apply the leader-election Role: " << applied.output);
    testenv::kubectl_or_fail("create rolebinding " + binding + " -n " + options_.pod_namespace +
                             " --role my-operator-leader-election --user " + options_.user);
  }
  for (const std::string& file : options_.extra_role_files) {
    if (options_.pod_namespace.empty()) FAIL("extra_role_files need pod_namespace");
    const std::string text = testenv::read_file(testenv::source_dir() + "/config/rbac/" + file);
    const auto named = text.find("  name: ");
    if (named == std::string::npos) FAIL("config/rbac/" << file << " names no Role");
    const std::string role = text.substr(named + 8, text.find('\n', named) - named - 8);
    auto applied = testenv::kubectl_apply(
        replaced(text, "namespace: my-operator-system", "namespace: " + options_.pod_namespace));
    if (!applied.ok()) FAIL("cannot apply config/rbac/" << file << ": " << applied.output);
    testenv::kubectl_or_fail("create rolebinding " + binding + "-" + role + " -n " + options_.pod_namespace +
                             " --role " + role + " --user " + options_.user);
  }
}

OperatorProcess::~OperatorProcess() {
  stop();
  if (options_.kubeconfig.empty())
    testenv::kubectl("delete clusterrolebinding " + binding_name(options_.user) + " --ignore-not-found");
  for (const auto& extra : extra_bindings_)
    testenv::kubectl("delete clusterrolebinding " + extra + " --ignore-not-found");
}

void OperatorProcess::start() {
  probe_port_ = free_port();
  metrics_port_ = free_port();
  std::vector<std::string> arguments = {
      options_.binary.starts_with("/") ? options_.binary : testenv::binary_dir() + "/" + options_.binary,
      "--kubeconfig",
      kubeconfig_,
      "--health-probe-bind-address",
      "127.0.0.1:" + std::to_string(probe_port_),
      "--metrics-bind-address",
      "127.0.0.1:" + std::to_string(metrics_port_),
      "--log-format",
      "text",
  };
  std::string namespaces;
  for (const auto& name : options_.namespaces) namespaces += (namespaces.empty() ? "" : ",") + name;
  if (!namespaces.empty()) {
    arguments.push_back("--namespaces");
    arguments.push_back(namespaces);
  }
  arguments.insert(arguments.end(), options_.extra_args.begin(), options_.extra_args.end());
  arguments.insert(arguments.begin(), options_.command_prefix.begin(), options_.command_prefix.end());

  std::vector<std::pair<std::string, std::string>> environment;
  if (!options_.pod_namespace.empty()) environment.emplace_back("POD_NAMESPACE", options_.pod_namespace);
  process_.start(std::move(arguments), log_path_, environment);
  const std::string probe =
      "curl -sf -o /dev/null http://127.0.0.1:" + std::to_string(probe_port_) + "/readyz";
  const bool ready = eventually(
      [&] {
        if (!running()) return true;  // reported below
        return testenv::run(probe).ok();
      },
      std::chrono::seconds(60));
  if (!running()) FAIL("my-operator exited during start-up; its log:\n" << log_tail());
  if (!ready) FAIL("my-operator not ready after 60 s; its log:\n" << log_tail());
}

bool OperatorProcess::running() { return process_.running(); }

// The whole process group (the child called setsid): a command_prefix such as strace blocks fatal
// signals and exits when the operator does.
void OperatorProcess::stop() {
  if (!process_.stop(std::chrono::seconds(30)))
    WARN("my-operator was still running 30 s after SIGTERM; killed it");
}

void OperatorProcess::kill() { process_.kill(); }

void OperatorProcess::signal(int signal) { process_.signal(signal); }

OperatorProcess::Probe OperatorProcess::readyz() const {
  // The body, then the status on a line of its own.
  const auto result = testenv::run(
      "curl -s -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(probe_port_) + "/readyz");
  Probe probe;
  const auto last_line = result.output.rfind('\n');
  if (!result.ok() || last_line == std::string::npos) return probe;
  probe.status = std::atoi(result.output.c_str() + last_line + 1);
  probe.body = result.output.substr(0, last_line);
  return probe;
}

std::string OperatorProcess::metrics() const {
  auto result = testenv::run("curl -sf http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics");
  return result.ok() ? result.output : std::string();
}

double OperatorProcess::metric(const std::string& sample) const {
  std::istringstream lines(metrics());
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 &&
        line[sample.size()] == ' ')
      return std::strtod(line.c_str() + sample.size() + 1, nullptr);
  }
  return -1;
}

OperatorProcess::Work OperatorProcess::work() const {
  const std::string text = metrics();
  Work work;
  work.read = !text.empty();
  work.queue_adds = metric_sum(text, "workqueue_adds_total");
  work.reconciles = metric_sum(text, "controller_runtime_reconcile_total");
  work.queued = metric_sum(text, "workqueue_depth");
  work.in_flight = metric_sum(text, "controller_runtime_active_workers");
  return work;
}

std::string OperatorProcess::Work::describe() const {
  if (!read) return "(no /metrics)";
  std::ostringstream text;
  text << queue_adds << " queue adds, " << reconciles << " reconciles; " << queued << " keys queued, "
       << in_flight << " reconciles running";
  return text.str();
}

void OperatorProcess::wait_until_settled(std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit;
  AuditTail writes(options_.user);
  Work last;
  std::size_t last_writes = 0;
  auto quiet_since = Clock::now();
  while (true) {
    if (!running())
      FAIL("my-operator exited while the test waited for it to settle; its log:\n" << log_tail());
    const Work now = work();
    const std::size_t now_writes = writes.writes();
    const auto at = Clock::now();
    if (!now.idle() || !last.read || now.queue_adds != last.queue_adds || now.reconciles != last.reconciles ||
        now_writes != last_writes)
      quiet_since = at;
    else if (at - quiet_since >= quiet)
      return;
    last = now;
    last_writes = now_writes;
    if (at >= deadline)
      FAIL("my-operator did not settle (" << quiet.count() << " ms without work) within " << limit.count()
                                          << " ms: " << now.describe() << ", " << now_writes
                                          << " writes meanwhile; its log:\n"
                                          << log_tail());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void OperatorProcess::wait_for_reconciles(double count, std::chrono::milliseconds limit) {
  Work now;
  const bool reached = eventually(
      [&] {
        now = work();
        return !running() || now.reconciles >= count;
      },
      limit);
  if (!running())
    FAIL("my-operator exited while the test waited for its reconciles; its log:\n" << log_tail());
  if (!reached)
    FAIL("my-operator finished " << now.reconciles << " reconciles, not " << count << ", within "
                                 << limit.count() << " ms: " << now.describe() << "; its log:\n"
                                 << log_tail());
}

std::string OperatorProcess::log_tail(std::size_t lines) const { return testing::log_tail(log_path_, lines); }

std::string AuditEntry::describe() const {
  return verb + " " + resource + (subresource.empty() ? "" : "/" + subresource) + " " + namespace_ + "/" +
         name + " -> " + std::to_string(code);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::size_t audit_mark(const std::string& log_path) {
  std::ifstream log(log_path.empty() ? testenv::audit_log_path() : log_path);
  std::size_t lines = 0;
  std::string line;
  while (std::getline(log, line)) ++lines;
  return lines;
}

namespace {

// One line of the audit log as an entry of `user`'s; nullopt for another user's, another stage or a
// line that is not JSON.
std::optional<AuditEntry> audit_entry_of(const std::string& line, const std::string& user) {
  if (line.find(user) == std::string::npos) return std::nullopt;
  rapidjson::Document entry;
  if (entry.Parse(line.c_str()).HasParseError() || !entry.IsObject()) return std::nullopt;
  if (string_member(entry, "stage") != "ResponseComplete") return std::nullopt;
  auto found_user = entry.FindMember("user");
  if (found_user == entry.MemberEnd() || string_member(found_user->value, "username") != user)
    return std::nullopt;
  AuditEntry result;
  result.verb = string_member(entry, "verb");
  result.request_uri = string_member(entry, "requestURI");
  result.user_agent = string_member(entry, "userAgent");
  result.received = string_member(entry, "requestReceivedTimestamp");
  result.completed = string_member(entry, "stageTimestamp");
  if (auto ref = entry.FindMember("objectRef"); ref != entry.MemberEnd()) {
    result.resource = string_member(ref->value, "resource");
    result.subresource = string_member(ref->value, "subresource");
    result.namespace_ = string_member(ref->value, "namespace");
    result.name = string_member(ref->value, "name");
  }
  if (auto status = entry.FindMember("responseStatus");
      status != entry.MemberEnd() && status->value.IsObject() && status->value.HasMember("code") &&
      status->value["code"].IsInt())
    result.code = status->value["code"].GetInt();
  return result;
}

// A change to the cluster as audit_writes counts it: Events and Leases are the operator's report
// and heartbeat.
bool counted_write(const AuditEntry& entry) {
  return is_write(entry.verb) && entry.resource != "events" && entry.resource != "leases";
}

}  // namespace

AuditTail::AuditTail(std::string user) : user_(std::move(user)) {
  std::ifstream log(testenv::audit_log_path(), std::ios::binary | std::ios::ate);
  if (!log)
    FAIL("no audit log at " << testenv::audit_log_path() << " (the control plane must run with --audit)");
  offset_ = static_cast<std::size_t>(log.tellg());
}

std::size_t AuditTail::writes() {
  read();
  return writes_;
}

std::size_t AuditTail::all_writes() {
  read();
  return all_writes_;
}

void AuditTail::read() {
  std::ifstream log(testenv::audit_log_path(), std::ios::binary);
  log.seekg(static_cast<std::streamoff>(offset_));
  const std::string appended((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  offset_ += appended.size();
  pending_ += appended;
  std::size_t start = 0;
  for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    const auto entry = audit_entry_of(pending_.substr(start, end - start), user_);
    if (entry && counted_write(*entry)) ++writes_;
    if (entry && is_write(entry->verb)) ++all_writes_;
  }
  pending_.erase(0, start);  // a line the API server is still writing waits for its end
}

std::vector<AuditEntry> audit_entries(const std::string& user, std::size_t mark,
                                      const std::string& log_path) {
  const std::string path = log_path.empty() ? testenv::audit_log_path() : log_path;
  std::ifstream log(path);
  if (!log) FAIL("no audit log at " << path << " (the control plane must run with --audit)");
  std::vector<AuditEntry> entries;
  std::string line;
  for (std::size_t number = 0; std::getline(log, line); ++number) {
    if (number < mark) continue;
    if (auto entry = audit_entry_of(line, user)) entries.push_back(std::move(*entry));
  }
  return entries;
}

std::vector<AuditEntry> audit_writes(const std::string& user, std::size_t mark, const std::string& log_path) {
  std::vector<AuditEntry> writes;
  for (auto& entry : audit_entries(user, mark, log_path)) {
    if (counted_write(entry)) writes.push_back(std::move(entry));
  }
  return writes;
}

std::vector<AuditEntry> deployment_writes(const std::string& user, std::size_t mark,
                                          const std::string& name) {
  std::vector<AuditEntry> kept;
  for (const auto& write : audit_writes(user, mark))
    if (write.resource == "deployments" && write.name == name) kept.push_back(write);
  return kept;
}

void wait_until_audit_quiet(const std::string& user, std::chrono::milliseconds quiet,
                            std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit;
  AuditTail tail(user);
  std::size_t last = 0;
  auto quiet_since = Clock::now();
  while (Clock::now() - quiet_since < quiet) {
    if (Clock::now() >= deadline)
      FAIL(user << "'s writes still reach the audit log " << limit.count() << " ms on: " << last);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::size_t now = tail.all_writes();
    if (now != last) quiet_since = Clock::now();
    last = now;
  }
}

double metric_sum(const std::string& metrics, const std::string& name,
                  const std::vector<std::string>& labels) {
  std::istringstream lines(metrics);
  double sum = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    if (std::any_of(labels.begin(), labels.end(),
                    [&](const std::string& label) { return line.find(label) == std::string::npos; }))
      continue;
    sum += std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
  }
  return sum;
}

double metric_sum(const std::string& metrics, const std::string& name, const std::string& label) {
  return metric_sum(metrics, name, std::vector<std::string>{label});
}

std::string describe(const std::vector<AuditEntry>& entries) {
  std::string text;
  for (const auto& entry : entries) text += "  " + entry.describe() + "\n";
  return text.empty() ? "  (none)\n" : text;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string jsonpath(const std::string& resource, const std::string& namespace_, const std::string& name,
                     const std::string& path) {
  auto result =
      testenv::kubectl("get " + resource + " " + name + " -n " + namespace_ + " -o jsonpath='" + path + "'");
  if (!result.ok()) return {};
  // kubectl 1.32 against a newer API server prints a version-skew warning on stderr, which
  // run() folds into the output; keep only the last line.
  std::string output = result.output;
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (auto newline = output.rfind('\n');
      newline != std::string::npos && output.find("WARNING") != std::string::npos)
    output = output.substr(newline + 1);
  return output;
}

std::string canary_annotations(const std::string& target, const std::string& features) {
  std::string annotations = "    myorg.io/canary: \"true\"\n    myorg.io/targetVersion: \"" + target + "\"\n";
  if (!features.empty()) annotations += "    myorg.io/features: \"" + features + "\"\n";
  return annotations;
}

std::string myresource_manifest(const std::string& namespace_, const std::string& name,
                                const std::string& image, int replicas, const std::string& extra_spec,
                                const std::string& annotations) {
  std::string manifest = "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name +
                         "\n  namespace: " + namespace_ + "\n";
  if (!annotations.empty()) manifest += "  annotations:\n" + annotations;
  manifest += "spec:\n  image: " + image + "\n  replicas: " + std::to_string(replicas) + "\n" + extra_spec;
  return manifest;
}

bool myresource_ready(const std::string& namespace_, const std::string& name) {
  const std::string line = jsonpath("myresource", namespace_, name,
                                    "{.metadata.generation} {.status.observedGeneration} "
                                    "{.status.conditions[?(@.type==\"Ready\")].status}");
  std::istringstream fields(line);
  std::string generation, observed, ready;
  fields >> generation >> observed >> ready;
  return !generation.empty() && generation == observed && ready == "True";
}

std::string condition_reason(const std::string& namespace_, const std::string& name,
                             const std::string& type) {
  return jsonpath("myresource", namespace_, name, "{.status.conditions[?(@.type==\"" + type + "\")].reason}");
}

std::string condition_status(const std::string& namespace_, const std::string& name,
                             const std::string& type) {
  return jsonpath("myresource", namespace_, name, "{.status.conditions[?(@.type==\"" + type + "\")].status}");
}

}  // namespace myop::testing

namespace myop::testing {

std::vector<std::string> events_about(const std::string& namespace_, const std::string& kind,
                                      const std::string& name) {
  auto result = testenv::kubectl("get events.v1.events.k8s.io -n " + namespace_ +
                                 " -o jsonpath='{range .items[*]}{.regarding.kind}/{.regarding.name} {.type} "
                                 "{.reason} {.note}{\"\\n\"}{end}'");
  std::vector<std::string> events;
  if (!result.ok()) return events;
  const std::string prefix = kind + "/" + name + " ";
  std::istringstream lines(result.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) events.push_back(line.substr(prefix.size()));
  }
  return events;
}

bool has_event(const std::string& namespace_, const std::string& kind, const std::string& name,
               const std::string& type, const std::string& reason) {
  const std::string start = type + " " + reason + " ";
  for (const auto& event : events_about(namespace_, kind, name)) {
    if (event.compare(0, start.size(), start) == 0) return true;
  }
  return false;
}

std::string describe(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += "  " + line + "\n";
  return text.empty() ? "  (none)\n" : text;
}

void set_feature_flags(const std::string& namespace_,
                       const std::vector<std::pair<std::string, std::string>>& data,
                       const std::string& name) {
  std::string manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
                         "\n  namespace: " + namespace_ + "\ndata:" + (data.empty() ? " {}\n" : "\n");
  for (const auto& [key, value] : data) manifest += "  " + key + ": \"" + value + "\"\n";
  // Server-side apply under one field manager: keys left out of a later call are removed.
  auto applied = testenv::kubectl_apply(manifest, "--server-side --force-conflicts");
  if (!applied.ok())
    FAIL("cannot write the feature ConfigMap " << namespace_ << "/" << name << ": " << applied.output);
}

std::string apply_test_cluster_role(const std::string& file) {
  const std::string path = testenv::source_dir() + "/config/rbac/" + file;
  std::string name =
      testenv::kubectl_or_fail("create --dry-run=client -o jsonpath={.metadata.name} -f " + path);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  name = name.substr(name.find_last_of('\n') + 1);  // after any version-skew warning
  const std::string renamed = "myop-test-" + name;
  const auto applied =
      testenv::kubectl_apply(replaced(testenv::read_file(path), "name: " + name, "name: " + renamed));
  if (!applied.ok()) FAIL("cannot apply " << path << ": " << applied.output);
  return renamed;
}

bool deployment_rolled(const std::string& namespace_, const std::string& name, const std::string& image) {
  const std::string line =
      jsonpath("deployment", namespace_, name,
               "{.spec.template.spec.containers[0].image} {.status.updatedReplicas} "
               "{.status.availableReplicas} {.spec.replicas} {.status.observedGeneration} "
               "{.metadata.generation}");
  std::istringstream fields(line);
  std::string live_image, updated, available, replicas, observed, generation;
  fields >> live_image >> updated >> available >> replicas >> observed >> generation;
  return live_image == image && updated == replicas && available == replicas && observed == generation;
}

namespace {
bool not_found(const std::string& resource, const std::string& namespace_, const std::string& name) {
  auto result = testenv::kubectl("get " + resource + " " + name + " -n " + namespace_);
  return !result.ok() && result.output.find("NotFound") != std::string::npos;
}
}  // namespace

bool myresource_gone(const std::string& namespace_, const std::string& name) {
  return not_found("myresource", namespace_, name);
}

bool deployment_gone(const std::string& namespace_, const std::string& name) {
  return not_found("deployment", namespace_, name);
}

}  // namespace myop::testing
