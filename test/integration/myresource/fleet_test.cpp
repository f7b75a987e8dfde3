// The operator binary with --fleet-kubeconfig-secrets (docs/multicluster.md) on real control planes: the
// fixture's is the hub, the members are control planes of their own (etcd and kube-apiserver,
// support/member_cluster.h) whose audit logs count the operator's requests there (its member identity,
// my-operator-fleet, is nobody else's).
//
// - One process reconciles the MyResources of the hub and of each member; a member's Secret added while
//   it runs engages that member without a restart; a flag change in the hub reaches members' objects,
//   the orphan sweep deletes a member's orphan; a deleted Secret disengages it, and its writes stop.
// - A member whose API server is paused for 60 s: another member's changes are reconciled meanwhile
//   (their latencies are reported against the same changes before the pause); the paused member catches
//   up after, and each of its spec changes reaches its Deployment once.
// - Fairness across clusters: a change in one member is reconciled while 5,000 objects of another wait.
// - Sharded replicas share the members (one shard slot each): each member written by one replica; one
//   replica SIGKILLed, the other takes its members over and writes each change once.
// - A ClusterProfile (cluster-inventory-api) engages its member with the credential of the operator's
//   access provider (an exec plugin), one naming an unknown provider is refused, a deleted one
//   disengages its member.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "packaging/packaging_support.h"
#include "policy/policy_support.h"
#include "runtime/sharding/shard_ring.h"
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
  options.extra_args = {"--leader-elect", "--fleet-kubeconfig-secrets", "--orphan-sweep-period", "1s"};
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

// The identity a sharded replica joined its group with (its log's "Joining the shard group" line).
std::string identity_in_log(const std::string& log) {
  const auto line = log.find("Joining the shard group");
  const auto at = line == std::string::npos ? line : log.find("identity=", line);
  if (at == std::string::npos) FAIL("no identity in the replica's log");
  const auto start = at + std::string("identity=").size();
  const auto end = log.find_first_of(" \n\"", start);
  return log.substr(start, end - start);
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

  // A feature-flag change in the hub concerns the members' MyResources too: each is reconciled again
  // with nothing changed in its member. A member has no Deployment controller, so its MyResource
  // waits for one (a requeue every 10 s) until the test reports its Deployment rolled out; then it is
  // quiet, and only the flag change can bring it back.
  const std::string generation =
      first.kubectl_or_fail("get deployment web -n " + ns.name() + " -o jsonpath={.metadata.generation}");
  first.kubectl_or_fail(
      "patch deployment web -n " + ns.name() +
      " --subresource=status --type merge -p '{\"status\":{\"observedGeneration\":" + generation +
      ",\"replicas\":1,\"updatedReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1}}'");
  const auto reconciles_of = [&](const MemberCluster& member) {
    return metric_sum(process.metrics(), "controller_runtime_reconcile_total",
                      "cluster=\"" + member.name() + "\"");
  };
  process.wait_until_settled();
  const double settled = reconciles_of(first);
  std::this_thread::sleep_for(12s);  // longer than the wait for a Deployment controller
  REQUIRE(reconciles_of(first) == settled);
  set_feature_flags(ns.name(), {{"orphanPolicy", "delete"}});
  CHECK(eventually([&] { return reconciles_of(first) > settled; }, 30s));

  // The orphan sweep goes over the members too: a managed Deployment in a member whose owner
  // MyResource does not exist there is deleted (the member has no garbage collector to do it).
  REQUIRE(
      third
          .kubectl_apply(
              "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ghost\n  namespace: " + ns.name() +
              "\n  labels: {app.kubernetes.io/managed-by: my-operator}\n  ownerReferences:\n"
              "  - {apiVersion: myorg.io/v1beta1, kind: MyResource, name: ghost, uid: "
              "6c0f3a52-0000-4000-8000-000000000001, controller: true}\nspec:\n  replicas: 0\n"
              "  selector: {matchLabels: {app: ghost}}\n  template:\n    metadata: {labels: "
              "{app: ghost}}\n    spec: {containers: [{name: app, image: nginx:1.27.1}]}\n")
          .ok());
  CHECK(eventually(
      [&] {
        return third.kubectl("get deployment ghost -n " + ns.name()).output.find("NotFound") !=
               std::string::npos;
      },
      30s));

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
  // A patch in flight when the server stopped comes back 504 when it resumes, applied or not: not
  // applied, it is retried (one 2xx); applied, the watch shows the new spec and nothing is written
  // again (the only write is the 504, and the image above is the new one). Every object written, at
  // most one 2xx each, anything else a timeout (the generations below agree: one change applied).
  std::map<std::string, int> applied;
  std::set<std::string> written;
  for (const auto& write : writes) {
    written.insert(write.name);
    if (write.code / 100 == 2)
      ++applied[write.name];
    else
      CHECK(write.code == 504);
  }
  CHECK(written.size() == static_cast<std::size_t>(kPausedObjects));
  CHECK(std::ranges::all_of(applied, [](const auto& entry) { return entry.second == 1; }));
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
    backlog.push_back(metric_sum(process.metrics(), "workqueue_depth", "cluster=\"fleet-fair-busy\""));
  }
  CHECK(std::ranges::none_of(latencies, [](double seconds) { return seconds < 0; }));
  INFO("the busy member's keys still queued (every priority) after each change: " << [&] {
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

TEST_CASE(
    "fleet: two sharded replicas share three members, one SIGKILLed, its members are taken over, no "
    "member written by two replicas at once",
    "[operator][fleet][sharding]") {
  testenv::apply_crd();
  // The replicas' home: their Leases and the members' Secrets.
  testenv::ScopedNamespace home("fleet-shards");
  const std::string role = testenv::read_file(testenv::source_dir() + "/config/rbac/sharding_role.yaml");
  const std::string in_home = "namespace: " + home.name();
  std::string sharding_role = role;
  sharding_role.replace(sharding_role.find("namespace: my-operator-system"), 29, in_home);
  REQUIRE(testenv::kubectl_apply(sharding_role).ok());
  constexpr int kObjects = 4;
  const std::string objects_namespace = "fleet-sharded";
  // Names in three different slots (fleet-east 15, fleet-west 5, fleet-north 10), so that the
  // replicas share them unless the assignment gives all three slots to one (1 in 5).
  std::vector<std::unique_ptr<MemberCluster>> members;
  for (const char* name : {"fleet-east", "fleet-west", "fleet-north"}) {
    members.push_back(std::make_unique<MemberCluster>(name));
    members.back()->kubectl_or_fail("create namespace " + objects_namespace);
    members.back()->put_secret(home.name());
  }
  std::vector<std::unique_ptr<OperatorProcess>> replicas;
  for (int i = 0; i < 2; ++i) {
    const std::string user = "myop-fleet-shard-" + std::to_string(i);
    OperatorOptions options = operator_options(user, {}, home.name());
    options.extra_role_files = {"fleet_role.yaml"};
    options.extra_args = {"--sharding", "--fleet-kubeconfig-secrets"};
    testenv::kubectl_or_fail("create rolebinding " + user + "-sharding -n " + home.name() +
                             " --role my-operator-sharding --user " + user);
    replicas.push_back(std::make_unique<OperatorProcess>(options));
    replicas.back()->start();
  }
  // Settled: both replicas members of the group, each owning its half of the slots. Every slot owned
  // between them is not enough: the first replica holds all sixteen until the second has taken its
  // share, and a member's slot handed over then would be written by both (one after the other).
  CHECK(eventually(
      [&] {
        for (const auto& replica : replicas) {
          if (replica->metric("myoperator_shard_members") != 2 ||
              replica->metric("myoperator_shard_slots_owned") != runtime::kShardSlots / 2)
            return false;
        }
        return true;
      },
      90s));

  // Work in every member: each member's writes come from one replica (its User-Agent names it).
  std::vector<std::size_t> marks;
  for (const auto& member : members) {
    marks.push_back(audit_mark(member->audit_log_path()));
    for (int i = 0; i < kObjects; ++i) {
      REQUIRE(member
                  ->kubectl_apply(
                      myresource_manifest(objects_namespace, "app-" + std::to_string(i), "nginx:1.27.1"))
                  .ok());
    }
  }
  for (const auto& member : members) {
    INFO("member " << member->name());
    CHECK(eventually(
        [&] {
          return image_of_deployment(*member, objects_namespace, "app-" + std::to_string(kObjects - 1)) ==
                 "nginx:1.27.1";
        },
        60s));
  }
  std::map<std::string, std::set<std::string>> writers;  // member -> User-Agents of its writes
  std::map<std::string, int> members_written;            // User-Agent -> members it wrote to
  for (std::size_t m = 0; m < members.size(); ++m) {
    for (const auto& write : audit_writes(kFleetMemberUser, marks[m], members[m]->audit_log_path()))
      writers[members[m]->name()].insert(write.user_agent);
    INFO("member " << members[m]->name() << " written by: " << writers[members[m]->name()].size());
    CHECK(writers[members[m]->name()].size() == 1);
    for (const auto& agent : writers[members[m]->name()]) ++members_written[agent];
  }
  REQUIRE_FALSE(members_written.empty());
  for (const auto& [agent, count] : members_written)
    WARN(agent << " wrote to " << count << " of the 3 members");
  // The replica that writes to the most members goes.
  const std::string doomed_agent =
      std::max_element(members_written.begin(), members_written.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  OperatorProcess* doomed = nullptr;
  OperatorProcess* survivor = nullptr;
  for (const auto& replica : replicas) {
    const std::string log = testenv::read_file(replica->log_path());
    // Its identity, which its User-Agent carries, is in its log (the member Lease it joined with).
    (doomed_agent.find(identity_in_log(log)) != std::string::npos ? doomed : survivor) = replica.get();
  }
  REQUIRE(doomed != nullptr);
  REQUIRE(survivor != nullptr);
  doomed->kill();
  const auto killed_at = std::chrono::steady_clock::now();

  // Every member's objects change; the survivor takes the dead replica's slots over (after its
  // membership expires) and writes each change once, and nothing else writes.
  marks.clear();
  for (const auto& member : members) {
    marks.push_back(audit_mark(member->audit_log_path()));
    for (int i = 0; i < kObjects; ++i) {
      member->kubectl_or_fail("patch myresource app-" + std::to_string(i) + " -n " + objects_namespace +
                              " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
    }
  }
  for (const auto& member : members) {
    for (int i = 0; i < kObjects; ++i) {
      INFO("member " << member->name() << ", app-" << i);
      CHECK(eventually(
          [&] {
            return image_of_deployment(*member, objects_namespace, "app-" + std::to_string(i)) ==
                   "nginx:1.27.2";
          },
          90s));
    }
  }
  WARN("every member's changes written " << seconds_since(killed_at)
                                         << " s after one of two replicas was SIGKILLed");
  survivor->wait_until_settled();
  for (std::size_t m = 0; m < members.size(); ++m) {
    const auto writes = audit_writes(kFleetMemberUser, marks[m], members[m]->audit_log_path());
    INFO("member " << members[m]->name() << ": " << describe(writes));
    std::size_t deployment_writes = 0;
    for (const auto& write : writes) {
      CHECK(write.user_agent != doomed_agent);
      if (write.resource == "deployments") ++deployment_writes;
    }
    CHECK(deployment_writes == static_cast<std::size_t>(kObjects));
  }
  CHECK(survivor->running());
}

TEST_CASE(
    "fleet: a ClusterProfile engages its member with the credentials of the operator's access provider, "
    "its deletion disengages it",
    "[operator][fleet]") {
  testenv::apply_crd();
  // The ClusterProfile CRD of the pinned cluster-inventory-api module.
  const auto downloaded =
      testenv::run("go mod download -json sigs.k8s.io/cluster-inventory-api@" +
                   policy::pinned_version("CLUSTER_INVENTORY_API_VERSION") + " 2>/dev/null");
  INFO(downloaded.output);
  REQUIRE(downloaded.ok());
  const auto dir_at = downloaded.output.find("\"Dir\": \"") + 8;
  const std::string module = downloaded.output.substr(dir_at, downloaded.output.find('"', dir_at) - dir_at);
  testenv::kubectl_or_fail("apply --server-side --force-conflicts -f " + module +
                           "/config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml");
  testenv::kubectl_or_fail("wait --for=condition=Established crd/clusterprofiles.multicluster.x-k8s.io");

  testenv::ScopedNamespace ns("fleet-profile");
  MemberCluster member("fleet-profile-a");
  member.kubectl_or_fail("create namespace " + ns.name());
  REQUIRE(member.kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  // In the member: a ServiceAccount with the member rules, whose token the access provider's plugin
  // hands out (as cluster-inventory-api's token-reading plugins do).
  member.kubectl_or_fail("create serviceaccount fleet-operator -n default");
  member.kubectl_or_fail(
      "create clusterrolebinding fleet-operator --clusterrole my-operator-fleet-member "
      "--serviceaccount default:fleet-operator");
  const std::string token = member.kubectl_or_fail("create token fleet-operator -n default --duration 1h");
  const std::string plugin = member.dir() + "/token-plugin.sh";
  std::ofstream(plugin)
      << "#!/bin/sh\n"
      << "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"token\":\""
      << token.substr(0, token.find_last_not_of("\n ") + 1) << "\"}}'\n";
  testenv::run("chmod +x " + plugin);
  // The provider file as the chart renders it from fleet.clusterProfiles.providers (its ConfigMap).
  const std::string rendered = packaging::helm_template(
      "-n " + ns.name() +
      " -s templates/configmap.yaml --set fleet.clusterProfiles.enabled=true --set-json " +
      packaging::shell_quote(
          R"(fleet.clusterProfiles.providers=[{"name":"token-plugin","execConfig":{"apiVersion":)"
          R"("client.authentication.k8s.io/v1","command":")" +
          plugin + R"("}}])"));
  std::string provider_file;
  for (const YAML::Node& object : YAML::LoadAll(rendered)) {
    if (object.IsMap() && object["metadata"]["name"].as<std::string>("") == "my-operator-fleet-providers")
      provider_file = object["data"]["providers.json"].as<std::string>("");
  }
  REQUIRE_FALSE(provider_file.empty());
  const std::string providers = member.dir() + "/providers.json";
  std::ofstream(providers) << provider_file;

  const std::string server =
      member.kubectl_or_fail("config view --minify -o jsonpath={.clusters[0].cluster.server}");
  const std::string ca = member.kubectl_or_fail(
      "config view --raw --minify -o jsonpath={.clusters[0].cluster.certificate-authority-data}");
  const auto put_profile = [&](const std::string& name, const std::string& provider) {
    const auto applied = testenv::kubectl_apply(
        "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ClusterProfile\n"
        "metadata: {name: " +
        name + ", namespace: " + ns.name() + "}\nspec: {displayName: " + name +
        ", clusterManager: {name: fleet-test}}\n");
    INFO(applied.output);
    REQUIRE(applied.ok());
    testenv::kubectl_or_fail(
        "patch clusterprofile " + name + " -n " + ns.name() +
        " --subresource=status --type merge -p '{\"status\":{\"accessProviders\":[{\"name\":\"" + provider +
        "\",\"cluster\":{\"server\":\"" + server + "\",\"certificate-authority-data\":\"" + ca + "\"}}]}}'");
  };
  put_profile("profile-a", "token-plugin");
  // A profile whose access provider the operator does not have: refused, alone.
  put_profile("profile-unknown", "someone-elses-plugin");

  OperatorOptions options = operator_options("myop-fleet-profile", {ns.name()}, ns.name());
  options.extra_role_files = {"fleet_cluster_profiles_role.yaml"};
  options.extra_args = {"--leader-elect", "--fleet-cluster-profile-providers", providers};
  OperatorProcess process(options);
  process.start();
  CHECK(eventually([&] { return image_of_deployment(member, ns.name(), "web") == "nginx:1.27.1"; }, 60s));
  CHECK(process.metric("myoperator_fleet_members{state=\"engaged\"}") == 1);
  CHECK(process.metric("myoperator_fleet_members{state=\"refused\"}") == 1);
  const auto written =
      audit_writes("system:serviceaccount:default:fleet-operator", 0, member.audit_log_path());
  CHECK_FALSE(written.empty());  // the plugin's credential wrote it

  // Deleting the ClusterProfile disengages its member: a change there is not written any more.
  process.wait_until_settled();
  const std::size_t mark = audit_mark(member.audit_log_path());
  testenv::kubectl_or_fail("delete clusterprofile profile-a -n " + ns.name());
  CHECK(eventually([&] { return process.metric("myoperator_fleet_members{state=\"engaged\"}") == 0; }, 30s));
  member.kubectl_or_fail("patch myresource web -n " + ns.name() +
                         " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
  process.wait_until_settled();
  CHECK(audit_writes("system:serviceaccount:default:fleet-operator", mark, member.audit_log_path()).empty());
  CHECK(image_of_deployment(member, ns.name(), "web") == "nginx:1.27.1");
  CHECK(process.running());
}
