// Deleting a MyResource on the real control plane, with the operator binary running under a user of
// its own: a cleanup the cluster refuses holds the finalizer, says so (Degraded/CleanupFailed and a
// Warning event), retries with a growing backoff rather than a storm, and finishes once the cluster
// allows it; deletions interrupted by a crashed operator finish after its restart.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// A change freeze as a cluster administrator sets one: a ValidatingAdmissionPolicy and its binding
// that deny DELETE of the Deployments my-operator manages in one namespace. Removed (if still
// there) when the guard goes away.
class DeploymentDeleteFreeze {
 public:
  explicit DeploymentDeleteFreeze(const std::string& namespace_) : name_("myop-test-freeze-" + namespace_) {
    const std::string manifest = R"(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: )" + name_ + R"(
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [apps]
        apiVersions: ["*"]
        operations: [DELETE]
        resources: [deployments]
  validations:
    - expression: >-
        !has(oldObject.metadata.labels) ||
        !('app.kubernetes.io/managed-by' in oldObject.metadata.labels)
      message: change freeze, Deployments managed by my-operator must not be deleted
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: )" + name_ + R"(
spec:
  policyName: )" + name_ + R"(
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: )" +
                                 namespace_ + "\n";
    auto applied = testenv::kubectl_apply(manifest);
    if (!applied.ok()) FAIL("cannot apply the change-freeze policy: " << applied.output);
    active_ = true;
  }
  ~DeploymentDeleteFreeze() { lift(); }
  DeploymentDeleteFreeze(const DeploymentDeleteFreeze&) = delete;
  DeploymentDeleteFreeze& operator=(const DeploymentDeleteFreeze&) = delete;

  void lift() {
    if (!active_) return;
    testenv::kubectl("delete validatingadmissionpolicybinding " + name_ + " --ignore-not-found");
    testenv::kubectl("delete validatingadmissionpolicy " + name_ + " --ignore-not-found");
    active_ = false;
  }

 private:
  std::string name_;
  bool active_ = false;
};

// A finalizer the test puts on the child Deployment to keep it Terminating until the test lets go.
constexpr const char* kTestHold = "example.com/test-hold";

// Whether the API server refuses to delete the Deployment now (a server-side dry run goes through
// admission and changes nothing).
bool delete_refused(const std::string& namespace_, const std::string& name) {
  auto result = testenv::kubectl("delete deployment " + name + " -n " + namespace_ + " --dry-run=server");
  return !result.ok() && result.output.find("change freeze") != std::string::npos;
}

std::vector<AuditEntry> deployment_deletes(const std::string& user, std::size_t mark,
                                           const std::string& name) {
  std::vector<AuditEntry> deletes;
  for (auto& entry : audit_entries(user, mark))
    if (entry.verb == "delete" && entry.resource == "deployments" && entry.name == name)
      deletes.push_back(entry);
  return deletes;
}

// The Warning Events about `name` with `reason` in the namespace (events.k8s.io/v1), as
// "type reason note" lines.
std::string warning_events(const std::string& namespace_, const std::string& name,
                           const std::string& reason) {
  auto result = testenv::kubectl(
      "get events.events.k8s.io -n " + namespace_ +
      " -o jsonpath='{range .items[*]}{.type}|{.reason}|{.regarding.name}|{.note}{\"\\n\"}{end}'");
  std::istringstream lines(result.output);
  std::string line, found;
  while (std::getline(lines, line)) {
    if (line.rfind("Warning|" + reason + "|" + name + "|", 0) == 0) found += line + "\n";
  }
  return found;
}

}  // namespace

TEST_CASE(
    "a refused cleanup holds the finalizer, reports CleanupFailed, backs off, and finishes once allowed",
    "[myresource][operator][deletion]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace ns("mr-cleanup");
  FinalizerRelease release(ns.name());
  OperatorProcess operator_process(operator_options("myop-cleanup", {ns.name()}, ns.name()));
  operator_process.start();

  REQUIRE(testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
  const std::string deployment_uid = jsonpath("deployment", ns.name(), "web", "{.metadata.uid}");
  REQUIRE_FALSE(deployment_uid.empty());

  // Declared after the operator: on a failure, lets go of the test's hold before the namespace goes.
  struct HoldRelease {
    std::string namespace_;
    ~HoldRelease() {
      testenv::kubectl("patch deployment web -n " + namespace_ +
                       " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
    }
  } hold_release{ns.name()};
  DeploymentDeleteFreeze freeze(ns.name());
  // Policies reach the API server's admission through an informer: wait until it enforces this one.
  REQUIRE(eventually([&] { return delete_refused(ns.name(), "web"); }, 30s));

  const std::size_t mark = audit_mark();
  const auto deleted_at = std::chrono::steady_clock::now();
  testenv::kubectl_or_fail("delete myresource web -n " + ns.name() + " --wait=false");

  // Visible: Degraded=True/CleanupFailed with the API server's reason in the message.
  REQUIRE(eventually([&] { return condition_reason(ns.name(), "web", "Degraded") == "CleanupFailed"; }, 60s));
  CHECK(condition_status(ns.name(), "web", "Degraded") == "True");
  CHECK(condition_reason(ns.name(), "web", "Ready") == "Deleting");
  const std::string message =
      jsonpath("myresource", ns.name(), "web", "{.status.conditions[?(@.type==\"Degraded\")].message}");
  INFO("Degraded message: " << message);
  CHECK(message.find("deleting Deployment web") != std::string::npos);
  CHECK(message.find("change freeze") != std::string::npos);
  // Held: the object stays, with its finalizer, and the Deployment is untouched.
  CHECK_FALSE(jsonpath("myresource", ns.name(), "web", "{.metadata.deletionTimestamp}").empty());
  CHECK(jsonpath("myresource", ns.name(), "web", "{.metadata.finalizers}").find(kOperatorFinalizer) !=
        std::string::npos);
  CHECK(jsonpath("deployment", ns.name(), "web", "{.metadata.uid}") == deployment_uid);
  CHECK(jsonpath("deployment", ns.name(), "web", "{.metadata.deletionTimestamp}").empty());
  // A Warning event says the same (the recorder posts it asynchronously).
  CHECK(eventually([&] { return !warning_events(ns.name(), "web", "CleanupFailed").empty(); }, 30s));
  INFO("CleanupFailed events:\n" << warning_events(ns.name(), "web", "CleanupFailed"));

  // Backoff: the DELETE attempts thin out. With the per-key exponential backoff (5 ms doubling)
  // about a dozen fall into the first 10 s and one or two into the next 20 s; a fixed-interval
  // retry or a hot loop fails one of these bounds.
  std::this_thread::sleep_until(deleted_at + 10s);
  const std::size_t mark_10s = audit_mark();
  const auto early = deployment_deletes(operator_process.user(), mark, "web");
  std::this_thread::sleep_until(deleted_at + 30s);
  const auto late = deployment_deletes(operator_process.user(), mark_10s, "web");
  INFO("DELETE attempts in the first 10 s:\n" << describe(early) << "in the next 20 s:\n" << describe(late));
  CHECK(early.size() >= 2);   // it did retry
  CHECK(early.size() <= 25);  // no storm
  CHECK(late.size() <= 4);    // and the waits grew
  CHECK(late.size() < early.size());
  for (const auto& attempt : early) CHECK(attempt.code >= 400);
  for (const auto& attempt : late) CHECK(attempt.code >= 400);
  CHECK(jsonpath("deployment", ns.name(), "web", "{.metadata.uid}") == deployment_uid);
  CHECK(operator_process.running());

  // Lift the freeze: the Deployment goes first, then the finalizer, then the object. A finalizer of
  // the test's own on the Deployment (as another controller may hold one) keeps it Terminating as
  // long as the test likes, so "the operator waits for the Deployment to be gone" is seen, not raced.
  testenv::kubectl_or_fail("patch deployment web -n " + ns.name() +
                           " --type merge -p '{\"metadata\":{\"finalizers\":[\"" + kTestHold + "\"]}}'");
  const std::size_t mark_lift = audit_mark();
  freeze.lift();
  REQUIRE(eventually([&] { return !delete_refused(ns.name(), "web"); }, 30s));
  // The next retry comes after the current backoff step (about 20 s at this point).
  REQUIRE(eventually(
      [&] { return !jsonpath("deployment", ns.name(), "web", "{.metadata.deletionTimestamp}").empty(); },
      120s));
  // The garbage collector finishes the foreground deletion (ReplicaSets, Pods); our hold remains.
  REQUIRE(eventually(
      [&] {
        return jsonpath("deployment", ns.name(), "web", "{.metadata.finalizers}") ==
               "[\"" + std::string(kTestHold) + "\"]";
      },
      60s));
  // The operator does not poll a Terminating child: its changes (the garbage collector's) bring the
  // next passes. Once it has settled after the last of them, it must still be waiting.
  operator_process.wait_until_settled();
  CHECK(jsonpath("myresource", ns.name(), "web", "{.metadata.finalizers}").find(kOperatorFinalizer) !=
        std::string::npos);
  CHECK(condition_reason(ns.name(), "web", "Ready") == "Deleting");
  CHECK(condition_status(ns.name(), "web", "Degraded") != "True");  // cleanup no longer fails

  testenv::kubectl_or_fail("patch deployment web -n " + ns.name() +
                           " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
  bool order_kept = true;
  std::string violation;
  const bool gone = eventually(
      [&] {
        const bool myresource_exists = testenv::kubectl("get myresource web -n " + ns.name()).ok();
        const bool finalizer_held =
            myresource_exists &&
            jsonpath("myresource", ns.name(), "web", "{.metadata.finalizers}").find(kOperatorFinalizer) !=
                std::string::npos;
        const bool deployment_exists = testenv::kubectl("get deployment web -n " + ns.name()).ok();
        if (!finalizer_held && deployment_exists) {
          order_kept = false;
          violation = myresource_exists ? "finalizer dropped while the Deployment exists"
                                        : "MyResource gone while the Deployment exists";
        }
        return !myresource_exists && !deployment_exists;
      },
      60s);
  INFO(violation);
  CHECK(order_kept);
  REQUIRE(gone);

  // The audit log agrees: the accepted DELETE of the Deployment precedes the finalizer's removal.
  const auto entries = audit_entries(operator_process.user(), mark_lift);
  INFO("the operator's requests after the lift:\n" << describe(entries));
  std::ptrdiff_t accepted_delete = -1, finalizer_patch = -1;
  for (std::size_t index = 0; index < entries.size(); ++index) {
    const auto& entry = entries[index];
    if (entry.verb == "delete" && entry.resource == "deployments" && entry.name == "web" &&
        entry.code < 300 && accepted_delete < 0)
      accepted_delete = static_cast<std::ptrdiff_t>(index);
    if (entry.verb == "patch" && entry.resource == "myresources" && entry.subresource.empty() &&
        entry.name == "web")
      finalizer_patch = static_cast<std::ptrdiff_t>(index);
  }
  CHECK(accepted_delete >= 0);
  CHECK(finalizer_patch > accepted_delete);
  CHECK(operator_process.running());
}

TEST_CASE("deletions interrupted by a killed operator finish after its restart",
          "[myresource][operator][deletion]") {
  testenv::ScopedNamespace ns("mr-kill-delete");
  FinalizerRelease release(ns.name());
  OperatorProcess operator_process(operator_options("myop-kill-delete", {ns.name()}, ns.name()));
  operator_process.start();
  auto client = kube::testing::admin_client();

  constexpr int kCount = 30;
  std::string manifests;
  for (int i = 0; i < kCount; ++i)
    manifests += "---\n" + myresource_manifest(ns.name(), "app-" + std::to_string(i), "nginx:1.27.1");
  auto applied = testenv::kubectl_apply(manifests);
  REQUIRE(applied.ok());
  REQUIRE(eventually(
      [&] {
        auto list = list_objects(client, myresource::myresource_type(), ns.name());
        int ready = 0;
        for (const auto& item : list["items"].GetArray()) ready += ready_and_current(item) ? 1 : 0;
        return ready == kCount;
      },
      180s));
  REQUIRE(
      list_objects(client, kube::resources::deployments(), ns.name(), kManagedBySelector)["items"].Size() ==
      kCount);

  // Delete them all and kill the operator as soon as the first one is gone: some deletions done,
  // the others in flight.
  testenv::kubectl_or_fail("delete myresources --all -n " + ns.name() + " --wait=false");
  std::size_t left_at_kill = 0;
  REQUIRE(eventually(
      [&] {
        left_at_kill = list_objects(client, myresource::myresource_type(), ns.name())["items"].Size();
        return left_at_kill < static_cast<std::size_t>(kCount);
      },
      120s));
  operator_process.kill();
  INFO("MyResources left when the operator was killed: " << left_at_kill);

  // While it is down, nothing finishes them: the rest stay Terminating, finalizer held.
  // A request the operator had in flight lands: its writes stop reaching the audit log.
  wait_until_audit_quiet(operator_process.user());
  const auto stuck = names_of(list_objects(client, myresource::myresource_type(), ns.name()));
  INFO("Terminating while the operator is down: " << stuck.size());
  WARN("operator killed with " << left_at_kill << " of " << kCount << " MyResources left; " << stuck.size()
                               << " stayed Terminating while it was down");
  REQUIRE(stuck.size() > 0);
  REQUIRE(stuck.size() < static_cast<std::size_t>(kCount));
  std::this_thread::sleep_for(8s);
  auto still = list_objects(client, myresource::myresource_type(), ns.name());
  CHECK(names_of(still) == stuck);
  for (const auto& item : still["items"].GetArray()) {
    const kube::ObjectView view(item);
    INFO(view.name());
    CHECK(view.is_being_deleted());
    CHECK(view.has_finalizer(kOperatorFinalizer));
  }

  // Restarted, it finishes every one: no MyResource, no Deployment, nothing left Terminating.
  operator_process.start();
  const bool finished = eventually(
      [&] {
        return list_objects(client, myresource::myresource_type(), ns.name())["items"].Empty() &&
               list_objects(client, kube::resources::deployments(), ns.name())["items"].Empty();
      },
      180s);
  INFO(
      "left: MyResources " << names_of(list_objects(client, myresource::myresource_type(), ns.name())).size()
                           << ", Deployments "
                           << names_of(list_objects(client, kube::resources::deployments(), ns.name())).size()
                           << "\noperator log:\n"
                           << operator_process.log_tail(30));
  CHECK(finished);
  CHECK(operator_process.running());
}
