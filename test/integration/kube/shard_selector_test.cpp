// Server-side sharded list and watch (KEP-5866, the ShardedListAndWatch gate that hack/testenv turns on)
// against the real API server: it hashes namespaces exactly as runtime/sharding/shard_ring.h does, says so in
// metadata.shardInfo, and a watch with the selector sends only the range's objects.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/object.h"
#include "kube/resource.h"
#include "kube/watch.h"
#include "kube/watch_source.h"
#include "kube_test_support.h"
#include "runtime/sharding/shard_ring.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::kube;
using namespace std::chrono_literals;
namespace testenv = myop::testenv;

namespace {

// Namespaces spread over the slots, each with one labelled ConfigMap.
struct Spread {
  std::vector<std::unique_ptr<testenv::ScopedNamespace>> namespaces;
  std::string label;
};

Spread spread_configmaps(int count) {
  Spread spread;
  spread.label = "shard-test=" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 0; i < count; ++i) {
    spread.namespaces.push_back(std::make_unique<testenv::ScopedNamespace>("shard"));
    const std::string& name = spread.namespaces.back()->name();
    testenv::kubectl_or_fail("create configmap probe -n " + name);
    testenv::kubectl_or_fail("label configmap probe -n " + name + " " + spread.label);
  }
  return spread;
}

std::set<std::string> namespaces_in(const Spread& spread, const std::set<int>& slots) {
  std::set<std::string> expected;
  for (const auto& scoped : spread.namespaces) {
    if (slots.count(runtime::shard_slot(scoped->name()))) expected.insert(scoped->name());
  }
  return expected;
}

}  // namespace

TEST_CASE("the API server filters a LIST by our shard selector and says so",
          "[integration][kube][shard-selector]") {
  auto spread = spread_configmaps(24);
  Client client = testing::admin_client();
  const std::vector<std::vector<int>> selections{
      {0, 1, 2, 3}, {5}, {6, 9, 15}, {8, 9, 10, 11, 12, 13, 14, 15}};
  std::set<std::string> seen_over_all;
  for (const auto& slots : selections) {
    ListOptions options;
    options.label_selector = spread.label;
    options.shard_selector = runtime::shard_selector(slots);
    auto list = client.list(resources::config_maps(), "", options);
    REQUIRE(list.ok());
    INFO("selector " << options.shard_selector);
    // The server applied it, and echoes what it applied.
    const std::string applied = testing::string_at(list.value(), {"metadata", "shardInfo", "selector"});
    CHECK_FALSE(applied.empty());
    std::set<std::string> got;
    for (const auto& item : list.value()["items"].GetArray()) {
      got.insert(testing::string_at(item, {"metadata", "namespace"}));
    }
    CHECK(got == namespaces_in(spread, std::set<int>(slots.begin(), slots.end())));
    seen_over_all.insert(got.begin(), got.end());
  }
  // The whole space in one range gives everything.
  ListOptions everything;
  everything.label_selector = spread.label;
  everything.shard_selector = runtime::shard_selector({0}, 1);
  auto all = client.list(resources::config_maps(), "", everything);
  REQUIRE(all.ok());
  CHECK(all.value()["items"].Size() == spread.namespaces.size());
}

TEST_CASE("a watch with a shard selector sends only its range's objects",
          "[integration][kube][shard-selector]") {
  auto spread = spread_configmaps(12);
  // Half the space: slots 0-7.
  const std::vector<int> slots{0, 1, 2, 3, 4, 5, 6, 7};
  const auto expected = namespaces_in(spread, {0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE_FALSE(expected.empty());
  Client client = testing::admin_client();
  auto shared_client = std::make_shared<Client>(client);
  WatcherOptions options;
  options.label_selector = spread.label;
  options.shard_selector = runtime::shard_selector(slots);
  Watcher watcher(make_client_watch_source(shared_client, resources::config_maps(), ""), options);

  std::mutex mutex;
  std::set<std::string> initial;
  std::set<std::string> modified;
  bool synced = false;
  bool last_arrived = false;
  std::stop_source stop;
  std::thread running([&] {
    (void)watcher.run(
        [&](WatcherEvent event) {
          std::lock_guard lock(mutex);
          if (event.type == WatcherEventType::InitApply)
            initial.insert(std::string(event.object->namespace_name()));
          if (event.type == WatcherEventType::InitDone) synced = true;
          if (event.type == WatcherEventType::Apply) {
            modified.insert(std::string(event.object->namespace_name()));
            if (event.object->view().label("touched") == std::optional<std::string_view>("last"))
              last_arrived = true;
          }
        },
        stop.get_token());
  });
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto wait_for = [&](auto done) {
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mutex);
        if (done()) return true;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  REQUIRE(wait_for([&] { return synced; }));
  // Every ConfigMap changes; only the range's changes arrive.
  for (const auto& scoped : spread.namespaces) {
    testenv::kubectl_or_fail("label configmap probe -n " + scoped->name() + " touched=yes");
  }
  // Then one of the range's ConfigMaps once more. The watch delivers changes in order: once that last
  // one has arrived, every change made before it that was going to arrive (a stray one from outside
  // the range too) has arrived.
  testenv::kubectl_or_fail("label configmap probe -n " + *expected.begin() + " touched=last --overwrite");
  const bool all_arrived = wait_for([&] { return last_arrived; });
  stop.request_stop();
  running.join();
  CHECK(all_arrived);
  CHECK(initial == expected);
  CHECK(modified == expected);
}
