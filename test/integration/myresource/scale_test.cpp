// 500 MyResources created at once while another client keeps writing to them and to their
// Deployments: the operator brings every one to Ready for its current generation, with exactly one
// Deployment each, and its errors settle once the writer stops. The real operator binary, under a
// user of its own, against the real control plane.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "kube/canonical_json.h"
#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kCount = 500;
constexpr int kWriters = 8;

std::string resource_name(int index) { return "app-" + std::to_string(index); }

// Runs `work(index)` for every index below `count` on kWriters threads; returns the failures.
int in_parallel(int count, const std::function<bool(int)>& work) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kWriters; ++thread) {
    threads.emplace_back([&] {
      for (int index = next++; index < count; index = next++)
        if (!work(index)) ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  return failures;
}

// Canonical: a MyResource read as CBOR has its members in the encoder's order (shuffled, for answers).
std::string env_json(const rapidjson::Value* env) {
  return env == nullptr ? "[]" : kube::canonical_json(*env);
}

}  // namespace

TEST_CASE(
    "500 MyResources at once under a concurrent writer: all Ready and current, one Deployment each, "
    "errors settle",
    "[myresource][operator][scale]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  const auto started = std::chrono::steady_clock::now();
  testenv::ScopedNamespace ns("mr-scale");
  FinalizerRelease release(ns.name());
  OperatorProcess operator_process(operator_options("myop-scale", {ns.name()}, ns.name()));
  operator_process.start();
  auto client = std::make_shared<kube::Client>(kube::testing::admin_client());
  auto writer_client = std::make_shared<kube::Client>(kube::testing::admin_client());
  const std::size_t mark = audit_mark();

  // The concurrent writer, started with the creation: label and annotate every MyResource, change
  // the spec (env) of every 10th, and scale every 25th Deployment by hand (a field the operator
  // owns and puts back). Three rounds, and no longer than 180 s after the start, so the whole test
  // stays inside ctest's 600 s on a loaded machine
  // (measured on 2 shared cores: 3 rounds take about 100 s, all Ready about 110-125 s after the
  // start, the clean-up by kubectl 110-140 s; the waits below end at 360 s and 570 s after the start).
  const auto writer_deadline = started + 180s;
  std::atomic<int> writer_writes{0};
  std::atomic<int> writer_rounds{0};
  std::thread writer([&] {
    kube::PatchOptions options;
    options.field_manager = "scale-test-writer";
    const auto stop_writer = [&] { return std::chrono::steady_clock::now() >= writer_deadline; };
    for (int round = 1; round <= 3 && !stop_writer(); ++round) {
      for (int index = 0; index < kCount && !stop_writer(); ++index) {
        const std::string name = resource_name(index);
        const std::string value = std::to_string(round);
        std::string patch = R"({"metadata":{"labels":{"writer-round":")" + value +
                            R"("},"annotations":{"example.com/touched":")" + value + R"("}})";
        if (index % 10 == 0) {
          patch = R"({"metadata":{"labels":{"writer-round":")" + value +
                  R"("}},"spec":{"env":[{"name":"ROUND","value":")" + value + R"("}]}})";
        }
        if (writer_client->patch(myresource::myresource_type(), ns.name(), name, kube::PatchType::Merge,
                                 patch, options))
          ++writer_writes;
        if (index % 25 == 0 &&
            writer_client->patch(kube::resources::deployments(), ns.name(), name, kube::PatchType::Merge,
                                 R"({"spec":{"replicas":3}})", options))
          ++writer_writes;
      }
      writer_rounds = round;
    }
  });

  // All 500 at once, from 8 client threads.
  const int create_failures = in_parallel(kCount, [&](int index) {
    const std::string json = R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":")" +
                             resource_name(index) + R"("},"spec":{"image":"nginx:1.27.1","replicas":1}})";
    rapidjson::Document body;
    body.Parse(json.c_str());
    return client->create(myresource_v1alpha1_type(), ns.name(), body).ok();
  });
  const double created_after = seconds_since(started);
  writer.join();
  const double writer_done_after = seconds_since(started);
  REQUIRE(create_failures == 0);
  INFO("created after " << created_after << " s; the writer made " << writer_writes << " writes in "
                        << writer_rounds << " rounds, done after " << writer_done_after << " s");
  REQUIRE(writer_rounds >= 1);  // at least one full round overlapped the creation

  // All Ready for their current generation (observedGeneration == generation), within 6 minutes
  // of the start.
  std::size_t ready = 0;
  const bool all_ready = eventually(
      [&] {
        auto list = list_objects(*client, myresource::myresource_type(), ns.name());
        ready = 0;
        for (const auto& item : list["items"].GetArray()) ready += ready_and_current(item) ? 1 : 0;
        return ready == static_cast<std::size_t>(kCount);
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(started + 360s -
                                                            std::chrono::steady_clock::now()));
  const double ready_after = seconds_since(started);
  INFO("Ready and current: " << ready << " of " << kCount << " after " << ready_after << " s\noperator log:\n"
                             << operator_process.log_tail(20));
  REQUIRE(all_ready);

  auto myresources = list_objects(*client, myresource::myresource_type(), ns.name());
  auto deployments = list_objects(*client, kube::resources::deployments(), ns.name(), kManagedBySelector);
  REQUIRE(myresources["items"].Size() == static_cast<rapidjson::SizeType>(kCount));
  std::map<std::string, const rapidjson::Value*> by_name;
  for (const auto& item : myresources["items"].GetArray()) {
    const kube::ObjectView view(item);
    by_name[std::string(view.name())] = &item;
    INFO(view.name());
    CHECK(view.has_finalizer(kOperatorFinalizer));
    CHECK(condition_field(item, "Degraded", "status") != "True");
  }

  // Exactly one Deployment per MyResource: same names, each controlled by its MyResource's UID,
  // with the spec the MyResource asks for (the hand-scaled ones put back, env followed).
  CHECK(deployments["items"].Size() == static_cast<rapidjson::SizeType>(kCount));
  std::set<std::string> deployment_names;
  for (const auto& item : deployments["items"].GetArray()) {
    const kube::ObjectView view(item);
    const std::string name(view.name());
    INFO("Deployment " << name);
    CHECK(deployment_names.insert(name).second);
    auto owner = by_name.find(name);
    REQUIRE(owner != by_name.end());
    const kube::ObjectView myresource(*owner->second);
    const auto controller = view.controller_owner();
    REQUIRE(controller.has_value());
    CHECK(controller->kind == "MyResource");
    CHECK(controller->uid == myresource.uid());
    const auto* replicas = view.find({"spec", "replicas"});
    CHECK((replicas != nullptr && replicas->IsInt() && replicas->GetInt() == 1));
    const auto* containers = view.find({"spec", "template", "spec", "containers"});
    REQUIRE((containers != nullptr && containers->IsArray() && containers->Size() == 1));
    const auto& container = (*containers)[0];
    CHECK(env_json(container.HasMember("env") ? &container["env"] : nullptr) ==
          env_json(myresource.find({"spec", "env"})));
  }
  CHECK(deployment_names.size() == static_cast<std::size_t>(kCount));

  // Errors settle: once all is Ready the error counter stops growing (the operator settles: a retry
  // storm never would), and the operator wrote no storm of conflicts (its only precondition is the
  // finalizer patch's resourceVersion).
  const std::string errors_sample = R"(controller_runtime_reconcile_errors_total{controller="myresource"})";
  const double errors_then = operator_process.metric(errors_sample);
  REQUIRE(errors_then >= 0);
  operator_process.wait_until_settled();
  const double errors_now = operator_process.metric(errors_sample);
  std::size_t writes = 0, conflicts = 0, failures = 0;
  for (const auto& entry : audit_writes(operator_process.user(), mark)) {
    ++writes;
    if (entry.code == 409)
      ++conflicts;
    else if (entry.code >= 400)
      ++failures;
  }
  INFO("reconcile errors: " << errors_then << " when all were Ready, " << errors_now << " once settled; the "
                            << "operator's writes: " << writes << ", 409: " << conflicts
                            << ", other failures: " << failures << "\noperator log:\n"
                            << operator_process.log_tail(20));
  CHECK(errors_now == errors_then);
  CHECK(conflicts <= static_cast<std::size_t>(kCount) / 10);
  CHECK(failures == 0);
  WARN("500 MyResources: created after " << created_after << " s, writer done after " << writer_done_after
                                         << " s, all Ready after " << ready_after << " s; operator writes "
                                         << writes << ", 409 " << conflicts << ", reconcile errors "
                                         << errors_now);

  // Clean-up: the operator releases all 500 (Deployments first, then finalizers); the namespace
  // then goes without anything Terminating.
  // All 500 deleted at once from 8 client threads (kubectl deletes one at a time at its 5 QPS).
  const auto cleanup_started = std::chrono::steady_clock::now();
  const int delete_failures = in_parallel(kCount, [&](int index) {
    return client->remove(myresource::myresource_type(), ns.name(), resource_name(index)).ok();
  });
  CHECK(delete_failures == 0);
  const bool all_gone = eventually(
      [&] { return list_objects(*client, myresource::myresource_type(), ns.name())["items"].Empty(); },
      std::chrono::duration_cast<std::chrono::milliseconds>(started + 570s -
                                                            std::chrono::steady_clock::now()));
  const double cleanup_took = seconds_since(cleanup_started);
  INFO("all deleted after " << cleanup_took << " s");
  CHECK(all_gone);
  CHECK(list_objects(*client, kube::resources::deployments(), ns.name())["items"].Empty());
  WARN("500 MyResources deleted at once: all gone (Deployments first) after " << cleanup_took << " s");
}
