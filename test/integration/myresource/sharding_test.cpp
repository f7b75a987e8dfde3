// Several active replicas (--sharding, docs/sharding.md) on the real control plane, each under a
// client-certificate user of its own so that the audit log says who wrote what:
// - three replicas share 2,000 MyResources over 50 namespaces: all Ready, each namespace written by
//   exactly one replica, every list and watch of the sharded kinds asked for a shard range;
// - scale 3 -> 5 -> 2 under a writer changing specs: every write of an object falls inside its
//   writer's tenure of the object's slot Lease (rebuilt from the audit log), every change lands;
// - SIGKILL: the killed replica's slots are taken over and a change in them is reconciled;
// - SIGSTOP past the membership deadline: the paused replica never writes again and exits.
// The same cases run on a control plane without the ShardedListAndWatch gate (client-side filtering):
// test/CMakeLists.txt's "no ShardedListAndWatch" run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/resource.h"
#include "myresource/cluster_listing.h"
#include "myresource/lease_tenures.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "runtime/sharding/shard_ring.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kSlots = runtime::kShardSlots;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Namespaces whose names spread over the slots (names that differ only in their last characters
// share the top bits of FNV-1a, so a counter suffix would put them all in one or two slots). They are
// deleted on destruction without waiting.
class Namespaces {
 public:
  explicit Namespaces(int count) {
    std::mt19937_64 random(std::random_device{}());
    std::string manifest;
    for (int i = 0; i < count; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "shard-%08llx", static_cast<unsigned long long>(random() >> 32));
      names_.emplace_back(name);
      manifest += "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + names_.back() + "\n";
    }
    auto created = testenv::kubectl_apply(manifest);
    if (!created.ok()) FAIL("cannot create the namespaces: " << created.output);
  }
  // Deleted (with everything in them) while the replicas still run, so that they handle the
  // MyResources' finalizers and the next test starts on a quiet cluster. Returns whether every
  // MyResource in them was gone within `timeout` (the rest is the garbage collector's and the
  // namespace controller's work, which needs no operator).
  bool remove(kube::Client& client, std::chrono::seconds timeout) {
    testenv::kubectl("delete namespace" + joined() + " --wait=false --ignore-not-found");
    const std::set<std::string> ours(names_.begin(), names_.end());
    // A namespace is gone only once everything in it is, MyResources with their finalizers included.
    // (Listing every MyResource instead, five times a second, slowed the API server enough to make
    // the deletion of 2,000 take longer than the timeout on a busy machine.)
    return eventually(
        [&] {
          auto list = client.list_all(kube::resources::namespaces(), "");
          if (!list) return false;
          for (const auto& item : list.value()["items"].GetArray()) {
            if (ours.contains(std::string(kube::ObjectView(item).name()))) return false;
          }
          return true;
        },
        timeout);
  }
  // A failed test may leave MyResources behind with no operator to drop their finalizer.
  ~Namespaces() {
    for (const auto& name : names_) FinalizerRelease release(name);
    testenv::kubectl("delete namespace" + joined() + " --wait=false --ignore-not-found");
  }
  Namespaces(const Namespaces&) = delete;
  Namespaces& operator=(const Namespaces&) = delete;
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::string joined() const {
    std::string list;
    for (const auto& name : names_) list += " " + name;
    return list;
  }
  std::vector<std::string> names_;
};

// Replicas of the operator with --sharding, their Leases in a namespace of their own.
class Replicas {
 public:
  explicit Replicas(const std::string& label) : lease_namespace_("shard-leases"), label_(label) {
    // config/rbac's sharding Role, in the Leases' namespace.
    const std::string role =
        replaced(testenv::read_file(testenv::source_dir() + "/config/rbac/sharding_role.yaml"),
                 "namespace: my-operator-system", "namespace: " + lease_namespace_.name());
    auto applied = testenv::kubectl_apply(role);
    if (!applied.ok()) FAIL("cannot apply the sharding Role: " << applied.output);
  }

  // Starts one more replica and returns its index.
  int add() {
    const int index = static_cast<int>(processes_.size());
    const std::string user = "myop-shard-" + label_ + "-" + std::to_string(index);
    OperatorOptions options = operator_options(user, {}, lease_namespace_.name());
    options.extra_args = {"--sharding"};
    testenv::kubectl("delete rolebinding " + user + "-sharding -n " + lease_namespace_.name() +
                     " --ignore-not-found");
    testenv::kubectl_or_fail("create rolebinding " + user + "-sharding -n " + lease_namespace_.name() +
                             " --role my-operator-sharding --user " + user);
    processes_.push_back(std::make_unique<OperatorProcess>(options));
    processes_.back()->start();
    return index;
  }

  OperatorProcess& at(int index) { return *processes_.at(static_cast<std::size_t>(index)); }
  int size() const { return static_cast<int>(processes_.size()); }
  const std::string& lease_namespace() const { return lease_namespace_.name(); }

  // Slot -> the user name holding its Lease ("" free), from the Leases' holderIdentity and the
  // member Leases (holder identities are not user names: the member Lease of each identity names
  // it; the identity's process is known by its log).
  std::map<int, std::string> slot_holders() {
    std::map<int, std::string> holders;
    const std::string out = testenv::kubectl_or_fail(
        "get leases -n " + lease_namespace_.name() +
        " -o jsonpath='{range .items[*]}{.metadata.name} {.spec.holderIdentity}{\"\\n\"}{end}'");
    std::istringstream lines(out);
    std::string name;
    std::string holder;
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      name.clear();
      holder.clear();
      fields >> name >> holder;
      const auto at = name.find("-slot-");
      if (at == std::string::npos) continue;
      holders[std::stoi(name.substr(at + 6))] = holder;
    }
    return holders;
  }

  // The sum of myoperator_shard_slots_owned over the running replicas, and whether every one of them
  // sees `members` members.
  // Every running replica sees `members` members, every slot is owned, and each owns its share of the
  // assignment (runtime/sharding/shard_ring.h: kSlots / members, one more for some): the first replica
  // holding every slot while the others, just counted as members, have not yet taken theirs is not settled
  // (work created then would be handed over, and written by two replicas).
  bool settled(int members) {
    const double least = kSlots / members;
    const double most = (kSlots + members - 1) / members;
    double owned = 0;
    for (auto& process : processes_) {
      if (!process->running()) continue;
      if (process->metric("myoperator_shard_members") != members) return false;
      const double slots = process->metric("myoperator_shard_slots_owned");
      if (slots < least || slots > most) return false;
      owned += slots;
    }
    return owned == kSlots;
  }

  std::string logs() {
    std::string text;
    for (auto& process : processes_) text += "--- " + process->user() + "\n" + process->log_tail(25);
    return text;
  }

 private:
  testenv::ScopedNamespace lease_namespace_;
  std::string label_;
  std::vector<std::unique_ptr<OperatorProcess>> processes_;
};

// `count` MyResources spread round-robin over `namespaces`, created by 8 threads of the admin client
// (kubectl would take a request and a process per object).
void create_myresources(const Namespaces& namespaces, int count) {
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int index = next++; index < count; index = next++) {
        const auto& ns = namespaces.names()[static_cast<std::size_t>(index) % namespaces.names().size()];
        const std::string json =
            R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"app-)" +
            std::to_string(index) + R"("},"spec":{"image":"nginx:1.27.0","replicas":1}})";
        rapidjson::Document body;
        body.Parse(json.c_str());
        if (!client->create(myresource_v1alpha1_type(), ns, body).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(failures == 0);
}

// A merge patch of the spec of every MyResource create_myresources() made; FAILs on an error.
void patch_myresources(const Namespaces& namespaces, int count, const std::string& spec) {
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  for (int index = 0; index < count; ++index) {
    const auto& ns = namespaces.names()[static_cast<std::size_t>(index) % namespaces.names().size()];
    auto patched = client->patch(myresource::myresource_type(), ns, "app-" + std::to_string(index),
                                 kube::PatchType::Merge, R"({"spec":)" + spec + "}");
    if (!patched) FAIL("patching " << ns << "/app-" << index << ": " << patched.error().to_string());
  }
}

// How many MyResources of `namespaces` are Ready for their current generation, of how many.
std::pair<int, int> ready_count(kube::Client& client, const Namespaces& namespaces) {
  const std::set<std::string> ours(namespaces.names().begin(), namespaces.names().end());
  auto list = list_objects(client, myresource::myresource_type(), "");
  int ready = 0;
  int total = 0;
  for (const auto& item : list["items"].GetArray()) {
    if (!ours.count(std::string(kube::ObjectView(item).namespace_name()))) continue;
    ++total;
    if (ready_and_current(item)) ++ready;
  }
  return {ready, total};
}

// Every object write of every user inside one of that user's tenures of the object's slot Lease
// (myresource/lease_tenures.h; slot Leases are never renewed). Returns the violations, one line each.
std::vector<std::string> writes_outside_tenure(Replicas& replicas, std::size_t mark) {
  std::vector<UserEntry> lease_writes;
  std::vector<UserEntry> object_writes;
  for (int i = 0; i < replicas.size(); ++i) {
    const std::string& user = replicas.at(i).user();
    for (auto& entry : audit_entries(user, mark)) {
      if (entry.resource == "leases" && (entry.verb == "create" || entry.verb == "update")) {
        lease_writes.emplace_back(user, entry);
      } else if (is_object_write(entry)) {
        object_writes.emplace_back(user, entry);
      }
    }
  }
  const auto slot_of_lease = [](const std::string& name) {
    const auto at = name.find("-slot-");
    return at == std::string::npos ? std::string() : std::to_string(std::stoi(name.substr(at + 6)));
  };
  const auto tenures = lease_tenures(std::move(lease_writes), slot_of_lease, HolderWrite::Releases);
  return writes_outside_tenures(tenures, object_writes, [](const AuditEntry& entry) {
    return std::to_string(runtime::shard_slot(entry.namespace_));
  });
}

// Whether this API server applies shardSelector (the ShardedListAndWatch gate is on).
bool server_filters_shards() {
  const auto answer =
      testenv::kubectl("get --raw '/api/v1/configmaps?limit=1&shardSelector=" +
                       replaced(replaced(runtime::shard_selector({0}, 1), " ", "%20"), "'", "%27") + "'");
  return answer.ok() && answer.output.find("shardInfo") != std::string::npos;
}

// The share case's object count: 2,000, or MYOP_SHARDING_SHARE_COUNT (the run without the
// ShardedListAndWatch gate uses fewer: it checks client-side filtering, not scale again).
int share_count() {
  const char* text = std::getenv("MYOP_SHARDING_SHARE_COUNT");
  return text != nullptr && *text != '\0' ? std::atoi(text) : 2000;
}

void write_figure(const std::string& line) {
  std::ofstream(testenv::binary_dir() + "/testenv/sharding-figures.txt", std::ios::app) << line << "\n";
}

}  // namespace

TEST_CASE("three sharded replicas share 2,000 MyResources over 50 namespaces, each namespace written by one",
          "[myresource][operator][sharding]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  Namespaces namespaces(50);
  Replicas replicas("share");
  const std::size_t mark = audit_mark();
  for (int i = 0; i < 3; ++i) replicas.add();
  REQUIRE(eventually([&] { return replicas.settled(3); }, 60s));

  const int count = share_count();
  const auto created_at = std::chrono::steady_clock::now();
  create_myresources(namespaces, count);
  std::pair<int, int> counts;
  const bool all_ready = eventually(
      [&] {
        counts = ready_count(*client, namespaces);
        return counts.first == count;
      },
      420s);
  INFO("Ready " << counts.first << " of " << counts.second << "\n" << replicas.logs());
  REQUIRE(all_ready);
  write_figure(
      "share: " + std::to_string(count) + " MyResources Ready " +
      std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - created_at).count()) +
      " s after the apply, 3 replicas");

  // Each namespace written by exactly one replica; together they wrote in every namespace.
  const bool server_side = server_filters_shards();
  write_figure(std::string("share: the API server ") + (server_side ? "filters" : "does not filter") +
               " by shard");
  std::map<std::string, std::set<std::string>> writers_of;
  for (int i = 0; i < replicas.size(); ++i) {
    const std::string& user = replicas.at(i).user();
    std::set<std::string> written;
    for (const auto& entry : audit_entries(user, mark)) {
      if (is_object_write(entry)) writers_of[entry.namespace_].insert(user);
      // Every list and watch of the sharded kinds' caches asked for a shard range (when the server
      // applies it; otherwise the replicas filter on their side). Lists of one object are the start-up
      // permission check (myresource/preflight.cpp), which reads no state.
      const bool one_object =
          entry.request_uri.find("limit=1&") != std::string::npos || entry.request_uri.ends_with("limit=1");
      if (server_side && !one_object && (entry.verb == "list" || entry.verb == "watch") &&
          (entry.resource == "myresources" || entry.resource == "deployments")) {
        INFO(user << " " << entry.verb << " " << entry.request_uri);
        CHECK(entry.request_uri.find("shardSelector=") != std::string::npos);
      }
    }
  }
  for (const auto& name : namespaces.names()) {
    INFO("namespace " << name << " (slot " << runtime::shard_slot(name) << ")");
    CHECK(writers_of[name].size() == 1);
  }
  // Whoever holds a slot's Lease now is the one replica that wrote in its namespaces.
  CHECK(writes_outside_tenure(replicas, mark).empty());
  const auto holders = replicas.slot_holders();
  CHECK(holders.size() == static_cast<std::size_t>(kSlots));
  for (const auto& [slot, holder] : holders) CHECK_FALSE(holder.empty());
  for (int i = 0; i < replicas.size(); ++i) {
    const double owned = replicas.at(i).metric("myoperator_shard_slots_owned");
    write_figure("share: replica " + std::to_string(i) + " owns " + std::to_string(static_cast<int>(owned)) +
                 " slots");
    CHECK(owned >= 5);  // 16 over 3: 5 or 6 each
  }
  const auto removing = std::chrono::steady_clock::now();
  CHECK(namespaces.remove(*client, 420s));
  write_figure(
      "share: the 50 namespaces and their 2000 MyResources gone " +
      std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - removing).count()) +
      " s after their deletion");
}

TEST_CASE("sharded replicas scaled 3 -> 5 -> 2 under a writer: no write outside its writer's slot tenure",
          "[myresource][operator][sharding]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  Namespaces namespaces(40);
  Replicas replicas("scale");
  const std::size_t mark = audit_mark();
  for (int i = 0; i < 3; ++i) replicas.add();
  create_myresources(namespaces, 200);
  REQUIRE(eventually([&] { return ready_count(*client, namespaces).first == 200; }, 180s));

  // The writer: changes the spec (an env value) of one MyResource after another until told to stop.
  std::atomic<bool> stop_writer{false};
  std::atomic<int> changes{0};
  std::thread writer([&] {
    for (int round = 0; !stop_writer; ++round) {
      for (int i = 0; i < 200 && !stop_writer; i += 7) {
        const auto& ns = namespaces.names()[static_cast<std::size_t>(i) % namespaces.names().size()];
        const std::string patch =
            R"({"spec":{"env":[{"name":"ROUND","value":")" + std::to_string(round) + R"("}]}})";
        if (testenv::kubectl("patch myresource app-" + std::to_string(i) + " -n " + ns +
                             " --type merge -p '" + patch + "'")
                .ok())
          ++changes;
      }
    }
  });

  // Writes keep coming before, during and after each handover.
  std::this_thread::sleep_for(5s);
  const auto scaled_up_at = std::chrono::steady_clock::now();
  replicas.add();
  replicas.add();
  const bool five = eventually([&] { return replicas.settled(5); }, 90s);
  const double up_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - scaled_up_at).count();
  std::this_thread::sleep_for(5s);
  const auto scaled_down_at = std::chrono::steady_clock::now();
  for (int i : {0, 2, 3}) replicas.at(i).stop();
  const bool two = eventually([&] { return replicas.settled(2); }, 90s);
  const double down_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - scaled_down_at).count();
  std::this_thread::sleep_for(5s);
  stop_writer = true;
  writer.join();
  INFO(replicas.logs());
  CHECK(five);
  CHECK(two);
  write_figure("scale: 3 -> 5 settled in " + std::to_string(up_seconds) + " s, 5 -> 2 in " +
               std::to_string(down_seconds) + " s, " + std::to_string(changes.load()) + " spec changes");
  for (int i : {1, 4}) {
    const double count = replicas.at(i).metric("myoperator_shard_handover_seconds_count");
    const double sum = replicas.at(i).metric("myoperator_shard_handover_seconds_sum");
    if (count > 0) {
      write_figure("scale: replica " + std::to_string(i) + " took " +
                   std::to_string(static_cast<int>(count)) + " slots, mean handover " +
                   std::to_string(sum / count) + " s");
    }
  }

  // Every change landed: each MyResource Ready for its current generation.
  CHECK(eventually([&] { return ready_count(*client, namespaces).first == 200; }, 120s));
  const auto violations = writes_outside_tenure(replicas, mark);
  INFO(violations.size() << " writes outside their writer's tenure:\n" << describe(violations));
  CHECK(violations.empty());
  CHECK(namespaces.remove(*client, 180s));
}

TEST_CASE("a SIGKILLed sharded replica's slots are taken over and their changes reconciled",
          "[myresource][operator][sharding]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  Namespaces namespaces(30);
  Replicas replicas("kill");
  const std::size_t mark = audit_mark();
  for (int i = 0; i < 3; ++i) replicas.add();
  REQUIRE(eventually([&] { return replicas.settled(3); }, 60s));
  create_myresources(namespaces, 90);
  REQUIRE(eventually([&] { return ready_count(*client, namespaces).first == 90; }, 180s));

  // The slots of replica 1, and a MyResource in one of them.
  const double owned = replicas.at(1).metric("myoperator_shard_slots_owned");
  REQUIRE(owned > 0);
  const auto killed_at = std::chrono::steady_clock::now();
  replicas.at(1).kill();
  // Change every MyResource at once: those of the killed replica's slots can only be reconciled by
  // the replica that takes the slot over.
  patch_myresources(namespaces, 90, R"({"replicas":2})");
  const bool settled = eventually([&] { return replicas.settled(2); }, 60s);
  const double takeover = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const bool reconciled = eventually([&] { return ready_count(*client, namespaces).first == 90; }, 120s);
  const double reconciled_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  INFO(replicas.logs());
  CHECK(settled);
  CHECK(reconciled);
  write_figure("kill: " + std::to_string(static_cast<int>(owned)) +
               " slots of the killed replica owned again " + std::to_string(takeover) +
               " s after SIGKILL (lease 15 s); all 90 reconciled after " + std::to_string(reconciled_after) +
               " s");
  // Every Deployment at 2 replicas: nothing left unreconciled.
  auto deployments = list_objects(*client, kube::resources::deployments(), "", kManagedBySelector);
  const std::set<std::string> ours(namespaces.names().begin(), namespaces.names().end());
  int at_two = 0;
  for (const auto& item : deployments["items"].GetArray()) {
    const kube::ObjectView view(item);
    if (!ours.count(std::string(view.namespace_name()))) continue;
    const auto* replicas_field = view.find({"spec", "replicas"});
    if (replicas_field != nullptr && replicas_field->IsInt() && replicas_field->GetInt() == 2) ++at_two;
  }
  CHECK(at_two == 90);
  CHECK(writes_outside_tenure(replicas, mark).empty());
  CHECK(namespaces.remove(*client, 180s));
}

TEST_CASE("a sharded replica paused past its membership deadline never writes again and exits",
          "[myresource][operator][sharding]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  Namespaces namespaces(30);
  Replicas replicas("pause");
  const std::size_t mark = audit_mark();
  for (int i = 0; i < 2; ++i) replicas.add();
  REQUIRE(eventually([&] { return replicas.settled(2); }, 60s));
  create_myresources(namespaces, 60);
  REQUIRE(eventually([&] { return ready_count(*client, namespaces).first == 60; }, 180s));

  // Pause replica 0 (as a stalled node would), change everything, and keep it paused past the
  // lease duration: replica 1 takes its slots over and reconciles the changes.
  replicas.at(0).signal(SIGSTOP);
  // A write it sent just before the pause may still complete, and be logged: counted from when its
  // writes in the log stop changing.
  wait_until_audit_quiet(replicas.at(0).user());
  const std::size_t paused_mark = audit_mark();
  patch_myresources(namespaces, 60, R"({"replicas":3})");
  const bool taken_over =
      eventually([&] { return replicas.at(1).metric("myoperator_shard_slots_owned") == kSlots; }, 60s);
  const bool reconciled = eventually([&] { return ready_count(*client, namespaces).first == 60; }, 120s);
  // Wake it: it must find its membership expired, stop without writing, and exit 1.
  replicas.at(0).signal(SIGCONT);
  const bool exited = eventually([&] { return !replicas.at(0).running(); }, 30s);
  INFO(replicas.logs());
  CHECK(taken_over);
  CHECK(reconciled);
  CHECK(exited);
  CHECK(replicas.at(0).log_tail(200).find("Shard membership lost") != std::string::npos);
  // Nothing written by it since it was paused, Leases included (a renewal after waking would make
  // the others believe in a member that has stopped).
  std::vector<AuditEntry> late;
  for (auto& entry : audit_entries(replicas.at(0).user(), paused_mark)) {
    const bool write = entry.verb == "create" || entry.verb == "update" || entry.verb == "patch";
    if (write && entry.code < 300 && entry.resource != "events") late.push_back(entry);
  }
  INFO("writes of the paused replica after its pause:\n" << describe(late));
  CHECK(late.empty());
  CHECK(writes_outside_tenure(replicas, mark).empty());
  CHECK(namespaces.remove(*client, 180s));
}
