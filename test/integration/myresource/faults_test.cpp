// Faults on the wire between the operator and the API server (docs/faults.md): the operator binary
// reaches the real control plane through a Toxiproxy (support/fault_proxy.h) that stalls, slices,
// delays and resets its connections, or is throttled by the API server's Priority and Fairness, and
// the API server's audit log witnesses what it wrote. Each case says the bound it proves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/config.h"
#include "kube/resource.h"
#include "myresource/cluster_listing.h"
#include "myresource/lease_tenures.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "support/fault_proxy.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// Applies `count` MyResources named <prefix>-<index> in one kubectl process (the admin, directly).
void apply_myresources(const std::string& namespace_, const std::string& prefix, int count,
                       const std::string& image, int replicas = 1) {
  std::string manifest;
  for (int index = 0; index < count; ++index)
    manifest +=
        "---\n" + myresource_manifest(namespace_, prefix + "-" + std::to_string(index), image, replicas);
  const auto applied = testenv::kubectl_apply(manifest);
  if (!applied.ok()) FAIL("kubectl apply failed:\n" << applied.output);
}

// MyResources Ready for their current generation, by one LIST.
std::size_t count_ready(kube::Client& client, const std::string& namespace_) {
  auto list = list_objects(client, myresource::myresource_type(), namespace_);
  std::size_t ready = 0;
  for (const auto& item : list["items"].GetArray()) ready += ready_and_current(item) ? 1 : 0;
  return ready;
}

// The count of the histogram bucket of `name` with the largest bound below `limit` (seconds).
double bucket_below(const std::string& metrics, const std::string& name, double limit) {
  std::istringstream lines(metrics);
  std::string line;
  double best_bound = -1, count = 0;
  while (std::getline(lines, line)) {
    if (line.rfind(name + "_bucket{", 0) != 0) continue;
    const auto le = line.find("le=\"");
    if (le == std::string::npos) continue;
    const double bound = std::strtod(line.c_str() + le + 4, nullptr);
    if (bound < limit && bound > best_bound) {
      best_bound = bound;
      count = std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
  }
  return count;
}

// Writes of one resource (and subresource) per object name.
std::map<std::string, int> writes_per_name(const std::vector<AuditEntry>& writes, const std::string& resource,
                                           const std::string& subresource = "") {
  std::map<std::string, int> counts;
  for (const auto& write : writes)
    if (write.resource == resource && write.subresource == subresource) ++counts[write.name];
  return counts;
}

// Every MyResource in the namespace has exactly one Deployment, controlled by it (its UID), with the
// image and replicas it asks for, and its status is current. Returns the problems, one line each.
std::vector<std::string> one_current_deployment_each(kube::Client& client, const std::string& namespace_) {
  auto myresources = list_objects(client, myresource::myresource_type(), namespace_);
  auto deployments = list_objects(client, kube::resources::deployments(), namespace_, kManagedBySelector);
  std::map<std::string, const rapidjson::Value*> deployment_by_name;
  std::vector<std::string> problems;
  for (const auto& item : deployments["items"].GetArray()) {
    const std::string name(kube::ObjectView(item).name());
    if (!deployment_by_name.emplace(name, &item).second) problems.push_back("two Deployments named " + name);
  }
  if (deployments["items"].Size() != myresources["items"].Size())
    problems.push_back(std::to_string(deployments["items"].Size()) + " Deployments for " +
                       std::to_string(myresources["items"].Size()) + " MyResources");
  for (const auto& item : myresources["items"].GetArray()) {
    const kube::ObjectView myresource(item);
    const std::string name(myresource.name());
    if (!ready_and_current(item)) problems.push_back(name + ": not Ready for its generation");
    const auto found = deployment_by_name.find(name);
    if (found == deployment_by_name.end()) {
      problems.push_back(name + ": no Deployment");
      continue;
    }
    const kube::ObjectView deployment(*found->second);
    const auto controller = deployment.controller_owner();
    if (!controller || controller->uid != myresource.uid())
      problems.push_back(name + ": not controlled by it");
    const auto* image = myresource.find({"spec", "image"});
    const auto* containers = deployment.find({"spec", "template", "spec", "containers"});
    if (image == nullptr || containers == nullptr || !containers->IsArray() || containers->Empty() ||
        !(*containers)[0].HasMember("image") ||
        std::string((*containers)[0]["image"].GetString()) != image->GetString())
      problems.push_back(name + ": the Deployment's image is not the spec's");
    const auto* status_image = myresource.find({"status", "image"});
    if (status_image == nullptr || !status_image->IsString() ||
        std::string(status_image->GetString()) != image->GetString())
      problems.push_back(name + ": status.image is not the spec's image (a lost status write?)");
  }
  return problems;
}

// Event objects about one object that say the same thing (type, reason, note) twice: repeats must
// fold into one Event's series.
std::vector<std::string> duplicate_events(const std::string& namespace_, const std::string& name) {
  std::vector<std::string> duplicates;
  std::set<std::string> seen;
  for (const auto& event : events_about(namespace_, "MyResource", name))
    if (!seen.insert(event).second) duplicates.push_back(name + ": " + event);
  return duplicates;
}

// Now as the audit log writes its timestamps (RFC 3339, microseconds, UTC), to compare as text.
std::string audit_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::ostringstream text;
  text << std::put_time(&utc, "%Y-%m-%dT%H:%M:%S") << "." << std::setw(6) << std::setfill('0') << micros
       << "Z";
  return text.str();
}

bool log_contains(const std::string& path, const std::string& text) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line))
    if (line.find(text) != std::string::npos) return true;
  return false;
}

// A namespace of the test's own whose MyResources' finalizers are released (the operator may be gone)
// before it is deleted.
class TestNamespace {
 public:
  explicit TestNamespace(const std::string& prefix) : namespace_(prefix), release_(namespace_.name()) {}
  const std::string& name() const { return namespace_.name(); }

 private:
  testenv::ScopedNamespace namespace_;
  FinalizerRelease release_;
};

enum class Proxy { with, without };

// FAILs unless the tests started the control plane (the scenarios read its audit log).
bool require_own_control_plane() {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  return true;
}

// What every scenario sets up: the clock of its figures, its namespace, a fault proxy in front of the
// API server (unless it needs none) and an admin client. Scenario "stall" gets namespace faults-stall-*,
// proxy "stall" and `user` myop-faults-stall. Operators are the scenario's own, declared after the
// fixture, so they stop before the proxy goes and the finalizers are released.
struct FaultScenario {
  explicit FaultScenario(const std::string& name, Proxy with = Proxy::with)
      : ns("faults-" + name), user("myop-faults-" + name) {
    if (with == Proxy::with) proxy.emplace(name);
  }

  // An operator of `operator_user` limited to this namespace (its feature flags and Events there too),
  // reaching the API server through the proxy; direct() without it.
  OperatorOptions through_proxy(const std::string& operator_user) const {
    auto options = direct(operator_user);
    options.server = proxy.value().url();
    return options;
  }
  OperatorOptions direct(const std::string& operator_user) const {
    return operator_options(operator_user, {ns.name()}, ns.name());
  }

  // Waits up to `timeout` until `count` MyResources of the namespace are Ready for their generation.
  bool all_ready(std::size_t count, std::chrono::seconds timeout) {
    return eventually(
        [&] {
          last_ready = count_ready(*client, ns.name());
          return last_ready == count;
        },
        timeout);
  }

  const bool own_control_plane = require_own_control_plane();  // first: nothing is made without it
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  TestNamespace ns;
  const std::string user;
  std::optional<FaultProxy> proxy;
  const std::shared_ptr<kube::Client> client = std::make_shared<kube::Client>(kube::testing::admin_client());
  std::size_t last_ready = 0;  // MyResources Ready at all_ready()'s last look
};

}  // namespace

// The API server sends a watch with allowWatchBookmarks a BOOKMARK about every minute (a constant of
// kube-apiserver, no flag changes it), so a watch silent for --watch-stall-timeout (70 s here; 90 s by
// default) is dead. Bound: the change made during the stall is seen at most the stall timeout after
// the stall began plus one backoff wait (0.8 s) and one reconnect.
TEST_CASE(
    "a watch stalled silently is dropped within the stall timeout and resumed: the change made meanwhile "
    "reaches its Deployment",
    "[myresource][operator][faults]") {
  FaultScenario scenario("stall");
  const auto& ns = scenario.ns;
  auto options = scenario.through_proxy(scenario.user);
  options.extra_args = {"--watch-stall-timeout", "70s"};
  OperatorProcess operator_process(options);
  operator_process.start();
  testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1"));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.1"); }, 120s));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 60s));
  // A healthy watch is never taken for a stalled one: bookmarks come more often than the timeout.
  CHECK_FALSE(log_contains(operator_process.log_path(), "stalled: no event and no bookmark"));

  const std::string stalls_of_myresources =
      "myoperator_watch_stalls_total{resource=\"myresources.myorg.io\"}";
  CHECK(operator_process.metric(stalls_of_myresources) == 0);

  const std::size_t mark = audit_mark();
  scenario.proxy->add_stall("stall");
  const auto stalled_at = std::chrono::steady_clock::now();
  const std::string stall_began = audit_now();
  testenv::kubectl_or_fail("patch myresource web -n " + ns.name() +
                           " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
  // Nothing reaches the operator: it settles (no key queued or reconciled for a while) with the change
  // in the API server, and its Deployment keeps the old image while the stall lasts.
  operator_process.wait_until_settled();
  CHECK(jsonpath("deployment", ns.name(), "web", "{.spec.template.spec.containers[0].image}") ==
        "nginx:1.27.1");

  // The operator notices: no byte for 70 s on its MyResource watch. The last byte came before the stall
  // (its own status writes' events, at most a bookmark interval earlier), so the bound counted from
  // the stall's start is the stall timeout.
  const auto stall_reported = [&] {
    std::ifstream file(operator_process.log_path());
    std::string line;
    while (std::getline(file, line))
      if (line.find("myresources.myorg.io") != std::string::npos &&
          (line.find("stalled: no event and no bookmark") != std::string::npos ||
           line.find("the connection is considered dead") != std::string::npos))
        return true;
    return false;
  };
  const bool noticed = eventually(stall_reported, 100s);
  const double noticed_after = seconds_since(stalled_at);
  // Counted before it is logged: the log line is the witness that the count is due.
  const double stalls_counted = operator_process.metric(stalls_of_myresources);
  scenario.proxy->remove("stall");
  INFO("operator log:\n" << operator_process.log_tail(30));
  REQUIRE(noticed);
  CHECK(noticed_after <= 70 + 10);
  CHECK(stalls_counted >= 1);

  // The new watch resumes from the resourceVersion it had (no relist) and brings the change.
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.2"); }, 60s));
  const double delivered_after = seconds_since(stalled_at);
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 60s));
  const auto deployment_writes = writes_per_name(audit_writes(operator_process.user(), mark), "deployments");
  // A watch is logged when it ends (stage ResponseComplete): the watch that stalled, begun before the
  // stall, is logged when the stall ends (not a relist), the resumed one only once it ends. So the
  // operator stops first, and only watches and lists received after the stall began count.
  operator_process.stop();
  bool resumed = false;
  bool relisted = false;
  std::vector<AuditEntry> entries;
  eventually(
      [&] {
        entries = audit_entries(operator_process.user(), mark);
        return std::any_of(entries.begin(), entries.end(), [&](const AuditEntry& entry) {
          return entry.resource == "myresources" && entry.verb == "watch" && entry.received > stall_began;
        });
      },
      30s);
  for (const auto& entry : entries) {
    if (entry.resource != "myresources" || entry.code >= 300 || entry.received < stall_began) continue;
    if (entry.verb == "watch" && entry.request_uri.find("sendInitialEvents=true") == std::string::npos &&
        entry.request_uri.find("resourceVersion=") != std::string::npos)
      resumed = true;
    if (entry.verb == "list" || entry.request_uri.find("sendInitialEvents=true") != std::string::npos)
      relisted = true;
  }
  CHECK(resumed);
  CHECK_FALSE(relisted);
  CHECK(deployment_writes == std::map<std::string, int>{{"web", 1}});
  WARN("stall: noticed " << noticed_after << " s after the stall began (bound 70 s + backoff), "
                         << stalls_counted << " stall(s) of the MyResource watch counted, the change "
                         << "reached the Deployment after " << delivered_after << " s; test took "
                         << seconds_since(scenario.started) << " s");
}

// Every byte in both directions cut into 1..7 byte pieces. TLS records arrive in pieces (the TLS
// layer puts them together; the watch parser's own splits are unit-tested and fuzzed). Bound: the
// same objects as an operator reached directly, for the same story.
TEST_CASE("every stream sliced into 1-7 byte pieces: a create/update/delete story ends as without the proxy",
          "[myresource][operator][faults]") {
  FaultScenario scenario("sliced");
  const auto& sliced_ns = scenario.ns;
  // The same story in a second namespace, by an operator reached directly.
  TestNamespace direct_ns("faults-direct");
  scenario.proxy->add_slicer("slice-down", ToxicStream::Downstream, 100us);
  scenario.proxy->add_slicer("slice-up", ToxicStream::Upstream, 100us);
  OperatorProcess direct(operator_options("myop-faults-direct", {direct_ns.name()}, direct_ns.name()));
  OperatorProcess sliced(scenario.through_proxy(scenario.user));
  direct.start();
  sliced.start();
  auto& client = scenario.client;
  const std::vector<std::string> namespaces = {direct_ns.name(), sliced_ns.name()};

  const auto all_ready = [&](std::size_t count) {
    return eventually(
        [&] {
          for (const auto& namespace_ : namespaces)
            if (count_ready(*client, namespace_) != count) return false;
          return true;
        },
        120s);
  };
  for (const auto& namespace_ : namespaces) {
    testenv::kubectl_apply(myresource_manifest(namespace_, "a", "nginx:1.27.1", 2));
    testenv::kubectl_apply(myresource_manifest(namespace_, "b", "nginx:1.27.1", 1,
                                               "  port: 8080\n  env:\n  - name: MODE\n    value: sliced\n"));
    testenv::kubectl_apply(myresource_manifest(namespace_, "c", "nginx:1.27.1", 1), "");
  }
  INFO("sliced operator log:\n" << sliced.log_tail(30));
  REQUIRE(all_ready(3));
  for (const auto& namespace_ : namespaces) {
    testenv::kubectl_or_fail("patch myresource a -n " + namespace_ +
                             " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
    testenv::kubectl_or_fail("patch myresource b -n " + namespace_ +
                             " --type merge -p '{\"spec\":{\"replicas\":3}}'");
    testenv::kubectl_or_fail("delete myresource c -n " + namespace_ + " --wait=false");
  }
  REQUIRE(eventually(
      [&] {
        for (const auto& namespace_ : namespaces)
          if (!myresource_gone(namespace_, "c") || !deployment_gone(namespace_, "c")) return false;
        return true;
      },
      120s));
  REQUIRE(all_ready(2));

  // What a user sees, without what differs by nature (namespace, uids, times).
  const auto projection = [](const std::string& namespace_) {
    return testenv::kubectl_or_fail(
               "get deployments -n " + namespace_ + " -l " + kManagedBySelector +
               " -o jsonpath='{range .items[*]}{.metadata.name} {.spec.replicas} "
               "{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports} "
               "{.spec.template.spec.containers[0].env} "
               "{.metadata.annotations.myorg\\.io/spec-hash}{\"\\n\"}{end}'") +
           testenv::kubectl_or_fail(
               "get myresources -n " + namespace_ +
               " -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.finalizers} {.status.image} "
               "{.status.specHash} {.status.replicaSummary} {range .status.conditions[*]}{.type}={.status}/"
               "{.reason} {end}{\"\\n\"}{end}'");
  };
  const std::string direct_view = projection(direct_ns.name());
  const std::string sliced_view = projection(sliced_ns.name());
  CHECK(sliced_view == direct_view);
  CHECK(direct_view.find("nginx:1.27.2") != std::string::npos);  // the story happened
  for (const auto& namespace_ : namespaces) CHECK(one_current_deployment_each(*client, namespace_).empty());
  WARN("sliced story: " << seconds_since(scenario.started) << " s");
}

// 2 s more on every answer and every watch event, 200 MyResources. Bound: all Ready within 5 minutes,
// no reconcile reaches its 1 minute deadline, exactly one Deployment write and one finalizer write per
// MyResource (no duplicate writes while answers are late), the queue drains.
TEST_CASE(
    "2 s of latency on every answer with 200 MyResources: one write each and no reconcile past its "
    "deadline and all converge",
    "[myresource][operator][faults]") {
  constexpr int kCount = 200;
  FaultScenario scenario("latency");
  const auto& ns = scenario.ns;
  auto& client = scenario.client;
  auto options = scenario.through_proxy(scenario.user);
  // Each reconcile waits for three answers (finalizer, Deployment, status): 6 s. 32 workers keep 200
  // of them within a few minutes; the 64 requests in flight of the client are the ceiling.
  options.extra_args = {"--max-concurrent-reconciles", "32"};
  OperatorProcess operator_process(options);
  operator_process.start();
  scenario.proxy->add_latency("latency", ToxicStream::Downstream, 2000ms);
  const std::size_t mark = audit_mark();

  apply_myresources(ns.name(), "app", kCount, "nginx:1.27.1");
  const bool converged = scenario.all_ready(kCount, 300s);
  const double converged_after = seconds_since(scenario.started);
  INFO("Ready: " << scenario.last_ready << " of " << kCount << " after " << converged_after
                 << " s\noperator log:\n"
                 << operator_process.log_tail(30));
  REQUIRE(converged);
  CHECK(one_current_deployment_each(*client, ns.name()).empty());

  // Trailing status writes of the rollouts land, then count. Quiet for three latencies: an answer and
  // the watch event it causes each come 2 s late, and the operator is idle while it waits for them.
  operator_process.wait_until_settled(6s, 300s);
  const auto writes = audit_writes(operator_process.user(), mark);
  const auto deployments = writes_per_name(writes, "deployments");
  const auto finalizers = writes_per_name(writes, "myresources");
  const auto statuses = writes_per_name(writes, "myresources", "status");
  CHECK(deployments.size() == static_cast<std::size_t>(kCount));
  CHECK(finalizers.size() == static_cast<std::size_t>(kCount));
  CHECK(statuses.size() == static_cast<std::size_t>(kCount));
  int most_status_writes = 0;
  for (const auto& [name, count] : deployments) CHECK((name + " " + std::to_string(count)) == (name + " 1"));
  for (const auto& [name, count] : finalizers) CHECK((name + " " + std::to_string(count)) == (name + " 1"));
  for (const auto& [name, count] : statuses) most_status_writes = std::max(most_status_writes, count);
  // A status write follows a change of what status shows: RollingOut with the Deployment's counts as
  // they move (0 -> 1 replica, updated, ready), then Available. More than 4 means writes repeated.
  CHECK(most_status_writes <= 4);

  const std::string metrics = operator_process.metrics();
  const double reconciles =
      metric_sum(metrics, "controller_runtime_reconcile_time_seconds_count", "myresource");
  const double within_deadline = bucket_below(metrics, "controller_runtime_reconcile_time_seconds", 60);
  CHECK(reconciles > 0);
  CHECK(within_deadline == reconciles);
  CHECK(metric_sum(metrics, "workqueue_depth", "myresource") == 0);
  CHECK(metric_sum(metrics, "controller_runtime_reconcile_panics_total", "myresource") == 0);
  WARN("2 s latency, " << kCount << " MyResources: all Ready after " << converged_after << " s, "
                       << reconciles << " reconciles, at most " << most_status_writes
                       << " status writes for one object; test took " << seconds_since(scenario.started)
                       << " s");
}

// Connections reset just after the API server answered a request (the write is done, the answer is
// lost), over and over while 20 MyResources are created and changed. Bound: one Deployment each, no
// status lost, no Event said twice outside its series.
TEST_CASE(
    "connections reset in the middle of writes: retried writes are idempotent and nothing is lost and no "
    "duplicate Events",
    "[myresource][operator][faults]") {
  constexpr int kCount = 20;
  FaultScenario scenario("reset");
  const auto& ns = scenario.ns;
  auto& client = scenario.client;
  OperatorProcess operator_process(scenario.through_proxy(scenario.user));
  operator_process.start();

  // A reset_peer toxic added to open connections closes each of them (half of them: toxicity 0.5)
  // instead of passing on the next answer the server sends, after the server handled the request. It is on
  // for 300 ms of every second, so connections opened meanwhile (cut in their TLS handshake) are not all that
  // is tested.
  // Catch's assertions are not thread-safe: the toxic is toggled here, the story runs on a thread that
  // only keeps kubectl's results.
  std::string story_failures;
  std::atomic<bool> story_done{false};
  std::thread story([&] {
    const auto apply = [&](const std::string& image, int replicas) {
      std::string manifest;
      for (int index = 0; index < kCount; ++index)
        manifest += "---\n" + myresource_manifest(ns.name(), "app-" + std::to_string(index), image, replicas);
      const auto applied = testenv::kubectl_apply(manifest);
      if (!applied.ok()) story_failures += applied.output;
    };
    apply("nginx:1.27.1", 1);
    std::this_thread::sleep_for(10s);
    apply("nginx:1.27.2", 2);
    std::this_thread::sleep_for(15s);
    story_done = true;
  });
  int reset_windows = 0;
  while (!story_done) {
    scenario.proxy->add_reset_peer("reset", ToxicStream::Downstream, 0ms, 0.5);
    std::this_thread::sleep_for(300ms);
    scenario.proxy->remove("reset");
    ++reset_windows;
    std::this_thread::sleep_for(700ms);
  }
  story.join();
  REQUIRE(story_failures.empty());

  const bool converged = scenario.all_ready(kCount, 180s);
  INFO("Ready: " << scenario.last_ready << " of " << kCount << "\noperator log:\n"
                 << operator_process.log_tail(40));
  REQUIRE(converged);
  const auto problems = one_current_deployment_each(*client, ns.name());
  INFO("problems:\n" << describe(problems));
  CHECK(problems.empty());
  std::vector<std::string> duplicates;
  for (int index = 0; index < kCount; ++index) {
    const auto found = duplicate_events(ns.name(), "app-" + std::to_string(index));
    duplicates.insert(duplicates.end(), found.begin(), found.end());
  }
  INFO("duplicate Events:\n" << describe(duplicates));
  CHECK(duplicates.empty());
  // The faults happened: requests ended without an answer.
  const double unanswered = metric_sum(operator_process.metrics(), "rest_client_requests_total", "<error>");
  CHECK(unanswered > 0);
  WARN("resets: " << reset_windows << " reset windows, " << unanswered << " requests without an answer; all "
                  << kCount << " converged; test took " << seconds_since(scenario.started) << " s");
}

namespace {

// Seconds since the epoch of an audit timestamp ("2026-12-03T06:34:53.123456Z"); 0 when unreadable.
double audit_seconds(const std::string& timestamp) {
  std::tm utc{};
  std::istringstream text(timestamp);
  text >> std::get_time(&utc, "%Y-%m-%dT%H:%M:%S");
  if (text.fail()) return 0;
  double fraction = 0;
  if (text.peek() == '.') text >> fraction;
  return static_cast<double>(timegm(&utc)) + fraction;
}

// A PriorityLevelConfiguration with the smallest share there is (1 against the defaults' 245, so 3 of
// the server's 600 seats) that borrows no seats from other levels (borrowingLimitPercent 0: without it
// a level may borrow up to the whole server) and lends none, and a FlowSchema that puts every request
// of `users` in it. One queue (handSize 1: every flow in it) of `queue_length` requests: a request that
// finds the seats taken and the queue full is refused with 429 at once, whatever the timing. Removed
// on destruction.
class TinyPriorityLevel {
 public:
  TinyPriorityLevel(const std::string& name, const std::vector<std::string>& users, int queue_length)
      : name_(name) {
    std::string subjects;
    for (const auto& user : users) subjects += "    - kind: User\n      user:\n        name: " + user + "\n";
    const auto applied = testenv::kubectl_apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata:\n  name: " +
        name_ +
        "\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 1\n    lendablePercent: 0\n"
        "    borrowingLimitPercent: 0\n    limitResponse:\n      type: Queue\n      queuing:\n"
        "        queues: 1\n        handSize: 1\n        queueLengthLimit: " +
        std::to_string(queue_length) +
        "\n---\n"
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: " +
        name_ + "\nspec:\n  priorityLevelConfiguration:\n    name: " + name_ +
        "\n  matchingPrecedence: 500\n  distinguisherMethod:\n    type: ByUser\n  rules:\n  - subjects:\n" +
        subjects +
        "    resourceRules:\n    - verbs: [\"*\"]\n      apiGroups: [\"*\"]\n      resources: [\"*\"]\n"
        "      namespaces: [\"*\"]\n      clusterScope: true\n    nonResourceRules:\n    - verbs: [\"*\"]\n"
        "      nonResourceURLs: [\"*\"]\n");
    if (!applied.ok()) FAIL("cannot apply the FlowSchema: " << applied.output);
    testenv::kubectl_or_fail("wait --for=condition=Dangling=False flowschema/" + name_ + " --timeout=30s");
  }
  ~TinyPriorityLevel() {
    testenv::kubectl("delete flowschema " + name_ + " --ignore-not-found");
    testenv::kubectl("delete prioritylevelconfiguration " + name_ + " --ignore-not-found");
  }
  // The most seats the level may use (nominal + borrowable), as the API server reports it; 0 when it
  // does not report it yet.
  int seats() const {
    const std::string sample = "apiserver_flowcontrol_upper_limit_seats{priority_level=\"" + name_ + "\"} ";
    std::istringstream lines(testenv::kubectl_or_fail("get --raw /metrics"));
    std::string line;
    while (std::getline(lines, line))
      if (line.rfind(sample, 0) == 0)
        return static_cast<int>(std::strtod(line.c_str() + sample.size(), nullptr));
    return 0;
  }
  TinyPriorityLevel(const TinyPriorityLevel&) = delete;
  TinyPriorityLevel& operator=(const TinyPriorityLevel&) = delete;

 private:
  std::string name_;
};

// A user of its own for a load generator, allowed what the operator is (the test ClusterRole that
// OperatorProcess binds); the binding is removed on destruction.
class LoadUser {
 public:
  explicit LoadUser(const std::string& name) : name_(name), binding_("myop-test-" + name) {
    testenv::kubectl("delete clusterrolebinding " + binding_ + " --ignore-not-found");
    testenv::kubectl_or_fail("create clusterrolebinding " + binding_ +
                             " --clusterrole myop-test-operator-manager --user " + name_);
    kube::ConfigSearch search;
    search.kubeconfig_path = testenv::kubeconfig_for_user(name_);
    auto config = kube::load_client_config(search);
    if (!config) FAIL("cannot load the load user's kubeconfig: " << config.error().to_string());
    config_ = config.value();
  }
  ~LoadUser() { testenv::kubectl("delete clusterrolebinding " + binding_ + " --ignore-not-found"); }
  LoadUser(const LoadUser&) = delete;
  LoadUser& operator=(const LoadUser&) = delete;
  const std::string& name() const { return name_; }
  const kube::ClientConfig& config() const { return config_; }

 private:
  std::string name_;
  std::string binding_;
  kube::ClientConfig config_;
};

// Threads listing MyResources in a namespace without pause, as `user`, with no retries and no regard for
// Retry-After: a refused list is sent again at once, so the pressure stays (and the server's Retry-After
// grows). Remembers the longest Retry-After its 429s carried.
class ListLoad {
 public:
  ListLoad(const kube::ClientConfig& config, const std::string& namespace_, int threads) {
    // The clients are made here: Catch's assertions (client_for FAILs) are not thread-safe.
    kube::TransportOptions transport;
    transport.retry.max_retries = 0;
    transport.retry.max_retry_after = std::chrono::seconds(0);  // caps the client's hold to nothing
    for (int thread = 0; thread < threads; ++thread) {
      auto client = std::make_shared<kube::Client>(kube::testing::client_for(config, transport));
      threads_.emplace_back([this, namespace_, client] {
        kube::ListOptions list_options;
        list_options.limit = 50;
        while (!stop_) {
          auto listed = client->list(myresource::myresource_type(), namespace_, list_options);
          if (!listed && listed.error().retry_after) {
            const auto seconds = listed.error().retry_after->count();
            auto seen = longest_retry_after_.load();
            while (seconds > seen && !longest_retry_after_.compare_exchange_weak(seen, seconds)) {
            }
          }
        }
      });
    }
  }
  ~ListLoad() { stop(); }
  ListLoad(const ListLoad&) = delete;
  ListLoad& operator=(const ListLoad&) = delete;
  void stop() {
    stop_ = true;
    for (auto& thread : threads_)
      if (thread.joinable()) thread.join();
  }
  std::int64_t longest_retry_after() const { return longest_retry_after_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> longest_retry_after_{0};
  std::vector<std::thread> threads_;
};

// The writes among `entries` refused with 429, and the shortest time until one of them was sent again.
struct RefusedWrites {
  int count = 0;
  double shortest_retry = 1e9;  // seconds from the 429's completion to the next such request's receipt
  std::string shortest_retry_of;
};

RefusedWrites refused_writes(const std::vector<AuditEntry>& entries) {
  RefusedWrites refused;
  for (std::size_t at = 0; at < entries.size(); ++at) {
    const auto& entry = entries[at];
    if (entry.code != 429 || entry.verb == "list" || entry.verb == "watch" || entry.verb == "get") continue;
    ++refused.count;
    // A create without a name in the audit log (an Event's) cannot be told from the next one.
    if (entry.name.empty()) continue;
    for (std::size_t next = at + 1; next < entries.size(); ++next) {
      const auto& again = entries[next];
      if (again.verb == entry.verb && again.resource == entry.resource &&
          again.subresource == entry.subresource && again.namespace_ == entry.namespace_ &&
          again.name == entry.name) {
        const double waited = audit_seconds(again.received) - audit_seconds(entry.completed);
        if (waited < refused.shortest_retry) {
          refused.shortest_retry = waited;
          refused.shortest_retry_of =
              entry.describe() + " at " + entry.completed + ", again at " + again.received;
        }
        break;
      }
    }
  }
  return refused;
}

}  // namespace

// A fault scenario's operator (16 workers) and a load user of its own, both put in one TinyPriorityLevel
// with one queue of `queue_length`. Being another user, the audit log tells the load's requests from the
// operator's. The level is named after the namespace: the API server keeps the Retry-After it grew for a
// level's name (up to 32 s) after the level is deleted, so a second run under the same name would start
// where the first ended, not at the server's first Retry-After (1 s).
struct ThrottledOperator {
  ThrottledOperator(const std::string& name, int queue_length)
      : scenario(name, Proxy::without),
        operator_process(with_workers(scenario.direct(scenario.user))),
        load_user(scenario.user + "-load"),
        tiny(scenario.ns.name(), {scenario.user, load_user.name()}, queue_length) {
    operator_process.start();
    REQUIRE(eventually([&] { return (seats = tiny.seats()) > 0; }, 30s));
  }

  // Waits until every one of `count` MyResources is Ready after the load stopped at `load_stopped`
  // (REQUIREd within 180 s), CHECKs that it took at most `bound` seconds and that each has one current
  // Deployment; returns the seconds it took.
  double converged_after_load(int count, std::chrono::steady_clock::time_point load_stopped, double bound) {
    const bool converged = scenario.all_ready(count, 180s);
    const double converged_after = seconds_since(load_stopped);
    INFO("Ready: " << scenario.last_ready << " of " << count << " " << converged_after
                   << " s after the load stopped\noperator log:\n"
                   << operator_process.log_tail(30));
    REQUIRE(converged);
    CHECK(converged_after <= bound);
    const auto problems = one_current_deployment_each(*scenario.client, scenario.ns.name());
    INFO("problems:\n" << describe(problems));
    CHECK(problems.empty());
    return converged_after;
  }

  FaultScenario scenario;
  OperatorProcess operator_process;
  LoadUser load_user;
  TinyPriorityLevel tiny;
  int seats = 0;

 private:
  static OperatorOptions with_workers(OperatorOptions options) {
    options.extra_args = {"--max-concurrent-reconciles", "16"};
    return options;
  }
};

// The API server's Priority and Fairness gives the operator's user 3 seats and a queue of 20, shared with
// a load generator that keeps both full, and refuses the rest with 429 + Retry-After (1 s, doubled by
// the server up to 32 s while it keeps refusing). The load stops after 20 s; the operator must be behind
// then (not every MyResource converged), or the run cannot show convergence after load and fails. Bound: no
// write is sent again sooner than Retry-After after its 429; once the load stops, every MyResource converges
// with one Deployment within 90 s (a Retry-After of at most 32 s, plus the client's 20 % jitter, then the
// work left).
TEST_CASE(
    "Priority and Fairness gives the operator a tiny share: 429s are honoured and nothing is lost and it "
    "converges once the load falls",
    "[myresource][operator][faults]") {
  constexpr int kCount = 60;
  // Above the operator's own requests in flight (16 workers, the event recorder), so that once the load
  // stops the operator alone is queued, not refused.
  constexpr int kQueueLength = 20;
  constexpr auto kLoad = 20s;
  constexpr double kConvergedBound = 90;  // seconds after the load stopped
  ThrottledOperator throttled("apf", kQueueLength);
  const auto& ns = throttled.scenario.ns;
  const std::string& user = throttled.scenario.user;
  auto& client = throttled.scenario.client;
  auto& operator_process = throttled.operator_process;
  const int seats = throttled.seats;
  const std::size_t mark = audit_mark();

  // The load: a thread for every seat and every place in the queue, each listing MyResources without
  // pause, and 4 more whose lists find the queue full and are sent again at once: a place that frees
  // is taken again within about a millisecond, so the operator's requests nearly always find the
  // queue full.
  const int load_threads = seats + kQueueLength + 4;
  ListLoad load(throttled.load_user.config(), ns.name(), load_threads);
  apply_myresources(ns.name(), "app", kCount, "nginx:1.27.1");
  std::this_thread::sleep_for(kLoad);
  // The moment the load falls: how far the operator got, and how often it was refused.
  const std::size_t ready_under_load = count_ready(*client, ns.name());
  const double refused_under_load =
      metric_sum(operator_process.metrics(), "rest_client_requests_total", "code=\"429\"");
  load.stop();
  const auto load_stopped = std::chrono::steady_clock::now();
  INFO(ready_under_load << " of " << kCount << " Ready for their generation when the load stopped, after "
                        << refused_under_load << " requests of the operator were refused with 429");
  // Convergence after the load can only be shown if the operator is behind when it stops.
  if (ready_under_load >= static_cast<std::size_t>(kCount))
    FAIL(
        "the load was too light: every MyResource converged under load, so this run cannot show that "
        "the operator converges once the load falls");
  CHECK(refused_under_load > 0);

  const double converged_after = throttled.converged_after_load(kCount, load_stopped, kConvergedBound);

  // The operator's writes refused with 429, and how soon each was sent again.
  const auto refused = refused_writes(audit_entries(user, mark));
  const double refused_in_all =
      metric_sum(operator_process.metrics(), "rest_client_requests_total", "code=\"429\"");
  INFO(refused.count << " writes refused with 429; the shortest wait before one was sent again: "
                     << refused.shortest_retry << " s (" << refused.shortest_retry_of << ")");
  REQUIRE(refused.count > 0);  // the fault happened
  CHECK(refused_in_all >= refused.count);
  CHECK(refused.shortest_retry >= 0.9);  // Retry-After: 1 (less the audit log's timestamp rounding)
  WARN("Priority and Fairness: " << seats << " seats, " << load_threads << " load threads; " << refused.count
                                 << " writes refused with 429 (" << refused_under_load
                                 << " requests under load, " << refused_in_all << " in all), shortest retry "
                                 << refused.shortest_retry << " s later; " << ready_under_load << " of "
                                 << kCount << " Ready when the load stopped, all " << converged_after
                                 << " s after (bound " << kConvergedBound << " s); test took "
                                 << seconds_since(throttled.scenario.started) << " s");
}

// The Retry-After of Priority and Fairness grows while a level keeps refusing (k8s.io/apiserver's
// dropped-requests tracker doubles it, at most once per Retry-After, up to 32 s) past the operator's
// request deadline (30 s), the case where a client that keeps Retry-After to the one request loses it.
// A load user alone grows the level's Retry-After to 32 s; then MyResources are created while the load
// goes on, until the operator has had a write refused, and 2 s more. Bound: no refused write of the
// operator is sent again sooner than 31.5 s after its 429 (32 s, less the audit log's timestamps); once
// the load stops, every MyResource converges within 90 s (32 s plus the client's 20 % jitter, then the
// work left).
TEST_CASE(
    "Priority and Fairness grows its Retry-After to 32 s: the operator waits out a wait past its "
    "request deadline, never less, and converges",
    "[myresource][operator][faults]") {
  constexpr int kCount = 20;
  constexpr int kQueueLength = 20;
  constexpr std::int64_t kGrownRetryAfter = 32;  // the tracker's largest
  constexpr double kConvergedBound = 90;         // seconds after the load stopped
  ThrottledOperator throttled("apf32", kQueueLength);
  const auto& ns = throttled.scenario.ns;
  const std::string& user = throttled.scenario.user;
  auto& operator_process = throttled.operator_process;

  ListLoad load(throttled.load_user.config(), ns.name(), throttled.seats + kQueueLength + 4);
  // 1 + 2 + 4 + 8 + 16 s of refusals at the least.
  const bool grown = eventually([&] { return load.longest_retry_after() >= kGrownRetryAfter; }, 120s);
  INFO("the load's longest Retry-After: " << load.longest_retry_after() << " s");
  REQUIRE(grown);
  const double grown_after = seconds_since(throttled.scenario.started);

  const std::size_t mark = audit_mark();
  const auto refused_now = [&] {  // the operator's PATCH, POST and PUT requests refused
    const std::string metrics = operator_process.metrics();
    double refused = 0;
    for (const char* method : {"PATCH", "POST", "PUT"})
      refused += metric_sum(metrics, "rest_client_requests_total",
                            {"code=\"429\"", "method=\"" + std::string(method) + "\""});
    return refused;
  };
  apply_myresources(ns.name(), "app", kCount, "nginx:1.27.1");
  // Until a write of the operator has been refused.
  REQUIRE(eventually([&] { return refused_now() > 0; }, 60s));
  std::this_thread::sleep_for(2s);
  const double refused_under_load = refused_now();
  load.stop();
  const auto load_stopped = std::chrono::steady_clock::now();
  const double converged_after = throttled.converged_after_load(kCount, load_stopped, kConvergedBound);

  const auto refused = refused_writes(audit_entries(user, mark));
  INFO(refused.count << " writes refused with 429; the shortest wait before one was sent again: "
                     << refused.shortest_retry << " s (" << refused.shortest_retry_of << ")");
  REQUIRE(refused.count > 0);
  CHECK(refused.shortest_retry >= kGrownRetryAfter - 0.5);
  WARN("Priority and Fairness, Retry-After grown to "
       << load.longest_retry_after() << " s after " << grown_after << " s of load; " << refused.count
       << " writes refused (" << refused_under_load << " under load), shortest retry "
       << refused.shortest_retry << " s later; all " << kCount << " Ready " << converged_after
       << " s after the load stopped (bound " << kConvergedBound << " s); test took "
       << seconds_since(throttled.scenario.started) << " s");
}

// Two replicas with --leader-elect; the leader reaches the API server through a proxy that turns into a
// blackhole (nothing passes either way, connections stay open), the standby directly. Bound: the leader
// stops (exits) at its renew deadline (10 s) after its last renewal, before the Lease (15 s) can pass;
// the standby acquires it and reconciles the change made meanwhile; in the audit log no write of the
// old leader ends after the standby's acquisition began.
TEST_CASE(
    "a leader behind a blackhole stops before its Lease can pass and the standby takes over with no "
    "overlapping writes",
    "[myresource][operator][faults]") {
  FaultScenario scenario("leader");
  const auto& ns = scenario.ns;
  auto leader_options = scenario.through_proxy(scenario.user);
  leader_options.extra_args = {"--leader-elect"};
  auto standby_options = scenario.direct("myop-faults-standby");
  standby_options.extra_args = {"--leader-elect"};
  OperatorProcess leader(leader_options);
  OperatorProcess standby(standby_options);
  const std::string leading = "leader_election_master_status{name=\"my-operator.myorg.io\"}";
  const std::size_t before_start = audit_mark();
  leader.start();
  REQUIRE(eventually([&] { return leader.metric(leading) == 1; }, 30s));
  standby.start();
  testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1"));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.1"); }, 120s));
  CHECK(standby.metric(leading) == 0);

  const std::size_t mark = audit_mark();
  scenario.proxy->add_blackhole("blackhole");
  scenario.proxy->add_stall("stall");
  const auto cut = std::chrono::steady_clock::now();
  testenv::kubectl_or_fail("patch myresource web -n " + ns.name() +
                           " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
  // It stops writing when it logs the loss (then exits with 1); polled every 200 ms, so the time
  // taken here is an upper bound.
  INFO("old leader's log:\n" << leader.log_tail(20));
  REQUIRE(eventually([&] { return log_contains(leader.log_path(), "Leader Lease lost"); }, 30s));
  const std::string leader_gone_at = audit_now();
  const double leader_gone_after = seconds_since(cut);
  CHECK(eventually([&] { return !leader.running(); }, 30s));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.2"); }, 90s));
  const double taken_over_after = seconds_since(cut);

  // The standby's acquisition: its first successful write of the Lease after the cut.
  std::string acquired_received;
  for (const auto& entry : audit_entries(standby.user(), mark)) {
    if (entry.resource == "leases" && (entry.verb == "update" || entry.verb == "create") &&
        entry.code < 300) {
      acquired_received = entry.received;
      break;
    }
  }
  REQUIRE_FALSE(acquired_received.empty());
  CHECK(leader_gone_at < acquired_received);  // the old leader had stopped before the Lease passed
  // The overlap check of the sharding tests, on the leader Lease (renewed by its holder): every object
  // write since the leader started inside its writer's tenure.
  std::vector<UserEntry> lease_writes;
  std::vector<UserEntry> object_writes;
  for (const auto* replica : {&leader, &standby}) {
    for (auto& entry : audit_entries(replica->user(), before_start)) {
      if (entry.resource == "leases") {
        lease_writes.emplace_back(replica->user(), entry);
      } else if (is_object_write(entry)) {
        object_writes.emplace_back(replica->user(), entry);
      }
    }
  }
  const auto tenures = lease_tenures(
      std::move(lease_writes),
      [](const std::string& name) { return name == "my-operator.myorg.io" ? name : std::string(); },
      HolderWrite::Renews);
  const auto overlaps = writes_outside_tenures(tenures, object_writes,
                                               [](const AuditEntry&) { return "my-operator.myorg.io"; });
  INFO("writes outside their writer's tenure of the leader Lease:\n" << describe(overlaps));
  CHECK(overlaps.empty());
  CHECK_FALSE(audit_writes(standby.user(), mark).empty());  // the standby did the work: the check can fail
  WARN("leader blackhole: the old leader exited "
       << leader_gone_after << " s after the cut (renew deadline 10 s), "
       << "the standby acquired the Lease at " << acquired_received
       << " and the change reached the Deployment " << taken_over_after << " s after the cut; test took "
       << seconds_since(scenario.started) << " s");
}
