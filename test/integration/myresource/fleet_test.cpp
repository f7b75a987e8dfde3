// The operator binary with --fleet-kubeconfig-secrets (docs/multicluster.md) on real control planes: the
// fixture's is the hub, the members are control planes of their own (etcd and kube-apiserver,
// support/member_cluster.h) whose audit logs count the operator's requests there (its member identity,
// my-operator-fleet, is nobody else's).
//
// - One process reconciles the MyResources of the hub and of each member; a member's Secret added while
//   it runs engages that member without a restart; a deleted Secret disengages it, and its writes stop.
// - A member whose API server is paused for 60 s: another member's changes are reconciled meanwhile
//   (their latencies are reported against the same changes before the pause); the paused member catches
//   up after, and each of its spec changes reaches its Deployment once.
// - Fairness across clusters: a change in one member is reconciled while 5,000 objects of another wait.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "support/member_cluster.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// The operator of a fleet test: leader election, the fleet, the hub namespace `namespace_` watched and
// its home (the members' Secrets live there; the same namespace is watched in every member).
OperatorOptions fleet_operator(const std::string& user, const std::string& namespace_) {
  OperatorOptions options = operator_options(user, {namespace_}, namespace_);
  options.extra_role_files = {"fleet_role.yaml"};
  options.extra_args = {"--leader-elect", "--fleet-kubeconfig-secrets"};
  return options;
}

std::string image_of_deployment(const MemberCluster& member, const std::string& namespace_,
                                const std::string& name) {
  const auto result = member.kubectl("get deployment " + name + " -n " + namespace_ +
                                     " -o jsonpath={.spec.template.spec.containers[0].image}");
  return result.ok() ? result.output : "";
}

// Patches the image of MyResource `name` in `member` and returns how long until its Deployment has it
// (polled every 20 ms, so an upper bound); -1 when it does not within `limit`.
double change_image(const MemberCluster& member, const std::string& namespace_, const std::string& name,
                    const std::string& image, std::chrono::milliseconds limit = 30s) {
  const auto start = std::chrono::steady_clock::now();
  member.kubectl_or_fail("patch myresource " + name + " -n " + namespace_ + " --type merge -p " +
                         "'{\"spec\":{\"image\":\"" + image + "\"}}'");
  while (std::chrono::steady_clock::now() - start < limit) {
    if (image_of_deployment(member, namespace_, name) == image) return seconds_since(start);
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}

// The operator's writes of Deployments in `member` after `mark` of its audit log.
std::vector<AuditEntry> deployment_writes(const MemberCluster& member, std::size_t mark) {
  std::vector<AuditEntry> writes;
  for (auto& entry : audit_writes(kFleetMemberUser, mark, member.audit_log_path())) {
    if (entry.resource == "deployments") writes.push_back(std::move(entry));
  }
  return writes;
}

std::string summary(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  if (seconds.empty()) return "none";
  return "median " + std::to_string(seconds[seconds.size() / 2]) + " s, max " +
         std::to_string(seconds.back()) + " s over " + std::to_string(seconds.size());
}

}  // namespace

TEST_CASE(
    "fleet: one operator reconciles the hub and its members, Secrets engage and disengage members "
    "while it runs",
    "[operator][fleet]") {
  testenv::apply_crd();
  testenv::ScopedNamespace ns("fleet-op");
  MemberCluster first("fleet-op-a");
  MemberCluster second("fleet-op-b");
  MemberCluster third("fleet-op-c");
  for (const MemberCluster* member : {&first, &second, &third}) {
    member->kubectl_or_fail("create namespace " + ns.name());
    REQUIRE(member->kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  }
  first.put_secret(ns.name());
  second.put_secret(ns.name());
  REQUIRE(testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());

  OperatorProcess process(fleet_operator("myop-fleet-op", ns.name()));
  process.start();
  // The hub's and each engaged member's MyResource, each into a Deployment of its own cluster.
  CHECK(
      eventually([&] { return jsonpath("deployment", ns.name(), "web", "{.metadata.name}") == "web"; }, 60s));
  for (const MemberCluster* member : {&first, &second}) {
    INFO("member " << member->name());
    CHECK(eventually([&] { return image_of_deployment(*member, ns.name(), "web") == "nginx:1.27.1"; }, 60s));
  }
  CHECK(image_of_deployment(third, ns.name(), "web").empty());  // no Secret yet: not a member

  // A third member's Secret engages it while the operator runs.
  const auto engage_started = std::chrono::steady_clock::now();
  third.put_secret(ns.name());
  CHECK(eventually([&] { return image_of_deployment(third, ns.name(), "web") == "nginx:1.27.1"; }, 60s));
  WARN("a member's Secret written -> its MyResource's Deployment created: " << seconds_since(engage_started)
                                                                            << " s");
  CHECK(process.metric("myoperator_fleet_members{state=\"engaged\"}") == 3);

  // A deleted Secret disengages its member: a change there is no longer written, while the same
  // change in a member still engaged is (the positive control, made after it).
  process.wait_until_settled();
  const std::size_t second_mark = audit_mark(second.audit_log_path());
  const std::size_t first_mark = audit_mark(first.audit_log_path());
  second.delete_secret(ns.name());
  CHECK(eventually([&] { return process.metric("myoperator_fleet_members{state=\"engaged\"}") == 2; }, 30s));
  second.kubectl_or_fail("patch myresource web -n " + ns.name() +
                         " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
  CHECK(change_image(first, ns.name(), "web", "nginx:1.27.2") >= 0);
  process.wait_until_settled();
  CHECK(deployment_writes(first, first_mark).size() == 1);
  const auto after_delete = audit_entries(kFleetMemberUser, second_mark, second.audit_log_path());
  INFO("the operator's requests to the disengaged member: " << describe(after_delete));
  CHECK(std::none_of(after_delete.begin(), after_delete.end(), [](const AuditEntry& entry) {
    return entry.verb != "get" && entry.verb != "list" && entry.verb != "watch";
  }));
  CHECK(image_of_deployment(second, ns.name(), "web") == "nginx:1.27.1");
  CHECK(process.running());
}

TEST_CASE(
    "fleet: a member's API server paused for 60 s does not hold the others back, it catches up after, "
    "each spec change written once",
    "[operator][fleet]") {
  testenv::apply_crd();
  testenv::ScopedNamespace ns("fleet-pause");
  MemberCluster paused("fleet-pause-a");
  MemberCluster working("fleet-pause-b");
  constexpr int kPausedObjects = 10;
  for (const MemberCluster* member : {&paused, &working}) {
    member->kubectl_or_fail("create namespace " + ns.name());
    for (int i = 0; i < kPausedObjects; ++i) {
      REQUIRE(
          member->kubectl_apply(myresource_manifest(ns.name(), "app-" + std::to_string(i), "nginx:1.27.1"))
              .ok());
    }
    member->put_secret(ns.name());
  }
  OperatorProcess process(fleet_operator("myop-fleet-pause", ns.name()));
  process.start();
  for (const MemberCluster* member : {&paused, &working}) {
    INFO("member " << member->name());
    CHECK(eventually(
        [&] {
          return image_of_deployment(*member, ns.name(), "app-" + std::to_string(kPausedObjects - 1)) ==
                 "nginx:1.27.1";
        },
        60s));
  }
  process.wait_until_settled();

  // Before: ten changes in the working member, one at a time.
  std::vector<double> before;
  for (int i = 0; i < 10; ++i)
    before.push_back(change_image(working, ns.name(), "app-" + std::to_string(i), "nginx:1.27.2"));
  CHECK(std::ranges::none_of(before, [](double seconds) { return seconds < 0; }));

  // Changes in the member about to be paused, then its API server stops answering: the operator has
  // some of them in flight, or queued.
  const std::size_t paused_mark = audit_mark(paused.audit_log_path());
  for (int i = 0; i < kPausedObjects; ++i) {
    paused.kubectl_or_fail("patch myresource app-" + std::to_string(i) + " -n " + ns.name() +
                           " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.3\"}}'");
  }
  paused.pause_apiserver();
  const auto paused_at = std::chrono::steady_clock::now();

  // During the pause: the same ten changes again in the working member.
  std::vector<double> during;
  for (int i = 0; i < 10; ++i)
    during.push_back(change_image(working, ns.name(), "app-" + std::to_string(i), "nginx:1.27.3"));
  CHECK(std::ranges::none_of(during, [](double seconds) { return seconds < 0; }));
  CHECK(process.readyz().status == 200);  // the hub works: the process stays ready
  WARN("working member, image change -> its Deployment: before the pause "
       << summary(before) << "; during the pause " << summary(during));
  const auto remaining = 60s - (std::chrono::steady_clock::now() - paused_at);
  if (remaining > 0s) std::this_thread::sleep_for(remaining);
  CHECK(process.metric("myoperator_fleet_member_ready{cluster=\"fleet-pause-a\"}") == 0);
  paused.resume_apiserver();

  // After: the paused member catches up, each of its ten changes reaching its Deployment, once.
  for (int i = 0; i < kPausedObjects; ++i) {
    INFO("app-" << i);
    CHECK(eventually(
        [&] { return image_of_deployment(paused, ns.name(), "app-" + std::to_string(i)) == "nginx:1.27.3"; },
        120s));
  }
  process.wait_until_settled();
  const auto writes = deployment_writes(paused, paused_mark);
  INFO("the operator's Deployment writes in the paused member: " << describe(writes));
  CHECK(writes.size() == static_cast<std::size_t>(kPausedObjects));
  for (int i = 0; i < kPausedObjects; ++i) {
    const std::string generation = paused.kubectl_or_fail("get deployment app-" + std::to_string(i) + " -n " +
                                                          ns.name() + " -o jsonpath={.metadata.generation}");
    CHECK(generation == "2");  // created, then one change
  }
  CHECK(process.running());
}

TEST_CASE("fleet: a change in one member is reconciled at once behind 5,000 queued objects of another",
          "[operator][fleet][scale]") {
  testenv::apply_crd();
  testenv::ScopedNamespace ns("fleet-fair");
  MemberCluster busy("fleet-fair-busy");
  MemberCluster quiet("fleet-fair-quiet");
  constexpr int kBacklog = 5000;
  for (const MemberCluster* member : {&busy, &quiet})
    member->kubectl_or_fail("create namespace " + ns.name());
  std::string manifest;
  for (int i = 0; i < kBacklog; ++i)
    manifest += "---\n" + myresource_manifest(ns.name(), "bulk-" + std::to_string(i), "nginx:1.27.1");
  const std::string path = busy.dir() + "/backlog.yaml";
  std::ofstream(path) << manifest;
  busy.kubectl_or_fail("create -f " + path + " -o name");
  REQUIRE(quiet.kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  busy.put_secret(ns.name());
  quiet.put_secret(ns.name());

  OperatorProcess process(fleet_operator("myop-fleet-fair", ns.name()));
  process.start();
  CHECK(eventually([&] { return image_of_deployment(quiet, ns.name(), "web") == "nginx:1.27.1"; }, 60s));

  // Twenty changes in the quiet member, one at a time, each measured while the busy member's backlog
  // is still queued (checked after each: the backlog had not drained, so the change did not wait for it).
  // The backlog's keys move from low to high priority as they are worked on (the operator's own
  // finalizer write on a new object is an update it sees), so the queue stays near 5,000 for a while.
  std::vector<double> latencies;
  std::vector<double> backlog;
  for (int i = 0; i < 20; ++i) {
    const std::string image = "nginx:1.27." + std::to_string(2 + i % 2);
    latencies.push_back(change_image(quiet, ns.name(), "web", image));
    backlog.push_back(metric_sum(process.metrics(), "workqueue_depth"));
  }
  CHECK(std::ranges::none_of(latencies, [](double seconds) { return seconds < 0; }));
  INFO("keys still queued (every priority) after each change: " << [&] {
    std::string text;
    for (double depth : backlog) text += std::to_string(static_cast<long>(depth)) + " ";
    return text;
  }());
  CHECK(std::ranges::all_of(backlog, [](double depth) { return depth > 0; }));
  const std::string metrics = process.metrics();
  const double reconciles = metric_sum(metrics, "controller_runtime_reconcile_time_seconds_count");
  const double reconcile_seconds = metric_sum(metrics, "controller_runtime_reconcile_time_seconds_sum");
  WARN("quiet member, image change -> its Deployment behind "
       << kBacklog << " queued objects of another member: " << summary(latencies) << "; mean reconcile "
       << reconcile_seconds / std::max(1.0, reconciles) << " s over " << reconciles << " reconciles");
  CHECK(process.running());
}
