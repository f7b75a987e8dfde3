#include "myresource/orphan_sweeper.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>

#include "fixtures.h"
#include "support/fake_clock.h"

using namespace myop;
using namespace myop::myresource;
using myop::myresource::testing::parse_json;

namespace {

class FakeSweepCluster final : public OrphanSweepCluster {
 public:
  std::vector<std::shared_ptr<const kube::Object>> deployments;
  std::map<std::string, std::shared_ptr<const kube::Object>> myresources;
  Features flags;
  std::vector<std::string> deleted;
  std::vector<std::string> events;
  std::map<std::string, kube::Error> delete_errors;
  // Called before each delete (a test stops the sweep from here).
  std::function<void()> before_delete;

  void for_each_managed_deployment(
      const std::function<void(const std::shared_ptr<const kube::Object>&)>& visit) override {
    for (const auto& deployment : deployments) visit(deployment);
  }
  std::shared_ptr<const kube::Object> get_myresource(const runtime::ObjectKey& key) override {
    auto found = myresources.find(key.name);
    return found == myresources.end() ? nullptr : found->second;
  }
  Features features() override {
    ++passes;
    return flags;
  }
  std::atomic<int> passes{0};
  kube::Result<void> delete_orphan(const Orphan& orphan, std::stop_token) override {
    if (before_delete) before_delete();
    if (auto error = delete_errors.find(orphan.name); error != delete_errors.end()) return error->second;
    deleted.push_back(orphan.name);
    return {};
  }
  void record_event(const runtime::EventSubject& subject, std::string_view type, std::string_view reason,
                    std::string_view, std::string_view) override {
    events.push_back(std::string(type) + " " + std::string(reason) + " " + subject.name);
  }

  void add_orphan(const std::string& name) {
    deployments.push_back(std::make_shared<const kube::Object>(parse_json(
        R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
        R"(","namespace":"team","uid":"uid-)" + name +
        R"(","labels":{"app.kubernetes.io/managed-by":"my-operator"},"ownerReferences":[{"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","name":"gone-)" +
        name + R"(","uid":"mr-)" + name + R"(","controller":true}]}})")));
  }
};

double counter(prometheus::Registry& registry, const std::string& action) {
  for (const auto& family : registry.Collect()) {
    if (family.name != "myoperator_orphans_total") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "action" && label.value == action) return metric.counter.value;
      }
    }
  }
  return 0;
}

// myoperator_orphan_sweeps_total; -1 when it is not registered.
double sweeps(prometheus::Registry& registry) {
  for (const auto& family : registry.Collect()) {
    if (family.name == "myoperator_orphan_sweeps_total" && family.metric.size() == 1)
      return family.metric.front().counter.value;
  }
  return -1;
}

struct Fixture {
  std::shared_ptr<FakeSweepCluster> cluster = std::make_shared<FakeSweepCluster>();
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  OrphanSweeper sweeper{cluster,
                        OrphanSweeperOptions{std::chrono::minutes(5), std::chrono::seconds(30), registry}};
};

}  // namespace

TEST_CASE("orphan sweep exports myoperator_orphans_total for both actions at 0 before any orphan",
          "[myresource][orphans]") {
  Fixture fixture;
  std::vector<std::string> actions;
  for (const auto& family : fixture.registry->Collect()) {
    if (family.name != "myoperator_orphans_total") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label)
        if (label.name == "action") actions.push_back(label.value);
      CHECK(metric.counter.value == 0);
    }
  }
  std::sort(actions.begin(), actions.end());
  CHECK(actions == std::vector<std::string>{"deleted", "reported"});
}

TEST_CASE("orphan sweep, policy report: each orphan reported once, nothing deleted",
          "[myresource][orphans]") {
  Fixture fixture;
  fixture.cluster->add_orphan("a");
  fixture.cluster->add_orphan("b");
  SweepReport first = fixture.sweeper.sweep({});
  CHECK(first.reported == std::vector<std::string>{"team/a", "team/b"});
  CHECK(fixture.cluster->deleted.empty());
  CHECK(fixture.cluster->events ==
        std::vector<std::string>{"Warning OrphanFound a", "Warning OrphanFound b"});
  SweepReport second = fixture.sweeper.sweep({});
  CHECK(second.reported.empty());
  CHECK(counter(*fixture.registry, "reported") == 2);
  CHECK(sweeps(*fixture.registry) == 2);
  CHECK(fixture.sweeper.needs_leader_election());
}

TEST_CASE("orphan sweep, policy delete: deletes, counts NotFound as done, reports failures",
          "[myresource][orphans]") {
  Fixture fixture;
  fixture.cluster->flags.orphan_policy = OrphanPolicy::Delete;
  for (const char* name : {"a", "b", "c"}) fixture.cluster->add_orphan(name);
  fixture.cluster->delete_errors.emplace("b", kube::make_error(kube::Reason::NotFound, "gone already", 404));
  fixture.cluster->delete_errors.emplace("c", kube::make_error(kube::Reason::Forbidden, "no delete", 403));
  SweepReport report = fixture.sweeper.sweep({});
  CHECK(report.deleted == std::vector<std::string>{"team/a", "team/b"});
  REQUIRE(report.failed.size() == 1);
  CHECK(report.failed[0].find("team/c") == 0);
  CHECK(counter(*fixture.registry, "deleted") == 2);
}

TEST_CASE("orphan sweep stops before the next delete once leadership goes", "[myresource][orphans]") {
  Fixture fixture;
  fixture.cluster->flags.orphan_policy = OrphanPolicy::Delete;
  for (const char* name : {"a", "b", "c"}) fixture.cluster->add_orphan(name);
  std::stop_source leadership;
  fixture.cluster->before_delete = [&] { leadership.request_stop(); };  // lost during the first delete
  SweepReport report = fixture.sweeper.sweep(leadership.get_token());
  CHECK(report.stopped);
  CHECK(fixture.cluster->deleted == std::vector<std::string>{"a"});
  CHECK(sweeps(*fixture.registry) == 0);  // a pass cut short is not counted as finished
}

TEST_CASE("orphan sweep switched off by the feature flag does nothing", "[myresource][orphans]") {
  Fixture fixture;
  fixture.cluster->flags.orphan_sweep = false;
  fixture.cluster->flags.orphan_policy = OrphanPolicy::Delete;
  fixture.cluster->add_orphan("a");
  CHECK(sweeps(*fixture.registry) == 0);
  SweepReport report = fixture.sweeper.sweep({});
  CHECK(report.deleted.empty());
  CHECK(report.reported.empty());
  CHECK(fixture.cluster->events.empty());
  CHECK(sweeps(*fixture.registry) == 1);  // a pass that read the flag
}

TEST_CASE("orphan sweep runs first after first_delay, then every period, on the injected clock",
          "[myresource][orphans]") {
  auto cluster = std::make_shared<FakeSweepCluster>();
  auto clock = std::make_shared<myop::testing::FakeClock>();
  OrphanSweeperOptions options;
  options.period = std::chrono::minutes(5);
  options.first_delay = std::chrono::seconds(30);
  options.clock = clock;
  OrphanSweeper sweeper(cluster, options);
  const auto start = clock->now();
  sweeper.start();
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30)));
  CHECK(cluster->passes == 0);
  clock->advance(std::chrono::seconds(30));
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30) + std::chrono::minutes(5)));
  CHECK(cluster->passes == 1);
  clock->advance(std::chrono::minutes(5));
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30) + std::chrono::minutes(10)));
  CHECK(cluster->passes == 2);
  sweeper.stop();  // wakes the wait at once; no further pass
  CHECK(cluster->passes == 2);
}

TEST_CASE("orphan sweep goes over every cluster of a fleet, each orphan deleted in its own cluster",
          "[myresource][orphans][fleet]") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto hub = std::make_shared<FakeSweepCluster>();
  auto member = std::make_shared<FakeSweepCluster>();
  hub->flags.orphan_policy = OrphanPolicy::Delete;
  member->flags.orphan_policy = OrphanPolicy::Report;  // the first cluster's features decide
  hub->add_orphan("in-hub");
  member->add_orphan("in-member");
  OrphanSweeperOptions options;
  options.registry = registry;
  OrphanSweeper sweeper(
      [hub, member] {
        return std::vector<std::shared_ptr<OrphanSweepCluster>>{hub, member};
      },
      options);
  SweepReport report = sweeper.sweep({});
  CHECK(report.deleted == std::vector<std::string>{"team/in-hub", "team/in-member"});
  CHECK(hub->deleted == std::vector<std::string>{"in-hub"});
  CHECK(member->deleted == std::vector<std::string>{"in-member"});
  CHECK(counter(*registry, "deleted") == 2);
}
