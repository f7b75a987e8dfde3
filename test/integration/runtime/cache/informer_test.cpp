// The informer against the real control plane: it must equal a fresh LIST through watch restarts,
// an API server restart and a forced 410, deliver deletes it missed, keep no managedFields, and
// read its own writes.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "kube/watch_source.h"
#include "runtime/cache/informer.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/controller/writer.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;

namespace {

// name -> resourceVersion of every ConfigMap in the namespace, by a fresh LIST.
std::map<std::string, std::string> fresh_list(kube::Client& client, const std::string& namespace_name) {
  auto list = client.list_all(kube::resources::config_maps(), namespace_name);
  if (!list) FAIL("LIST failed: " << list.error().to_string());
  std::map<std::string, std::string> result;
  for (const auto& item : list.value()["items"].GetArray()) {
    result[item["metadata"]["name"].GetString()] = item["metadata"]["resourceVersion"].GetString();
  }
  return result;
}

std::map<std::string, std::string> cached(const Informer& informer) {
  std::map<std::string, std::string> result;
  for (const auto& object : informer.cache().list()) {
    result[std::string(object->name())] = std::string(object->resource_version());
  }
  return result;
}

// Creates `count` labelled ConfigMaps through the API in parallel (kubectl one by one is far slower).
void create_config_maps(kube::Client& client, const std::string& namespace_name, int count,
                        const std::string& prefix) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int writer = 0; writer < 8; ++writer) {
    writers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        const std::string json = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + prefix +
                                 std::to_string(i) + R"(","labels":{"set":"bulk"}},"data":{"value":")" +
                                 std::to_string(i) + R"("}})";
        rapidjson::Document body;
        body.Parse(json.c_str());
        if (!client.create(kube::resources::config_maps(), namespace_name, body)) ++failures;
      }
    });
  }
  for (auto& writer : writers) writer.join();
  REQUIRE(failures == 0);
}

struct Recorder {
  std::mutex mutex;
  std::multiset<std::string> deleted;
  int events = 0;
  void attach(Informer& informer) {
    informer.subscribe([this](const ObjectEvent& event) {
      std::lock_guard lock(mutex);
      ++events;
      if (event.type == EventType::deleted) deleted.insert(std::string(event.object->name()));
    });
  }
  std::size_t deleted_count() {
    std::lock_guard lock(mutex);
    return deleted.size();
  }
};

InformerOptions options_for(const std::string& namespace_name) {
  InformerOptions options;
  options.name = "configmaps";
  options.namespace_name = namespace_name;
  return options;
}

}  // namespace

TEST_CASE("informer over 2,000 objects equals a fresh LIST through restarts and a 410",
          "[runtime][informer]") {
  testenv::ScopedNamespace ns("rt-informer");
  auto client = admin_client();
  create_config_maps(*client, ns.name(), 2000, "cm-");

  // The informer's own connection can be cut to simulate a partition.
  auto transport = std::make_shared<CuttableTransport>(admin_transport());
  auto informer_client = std::make_shared<kube::Client>(transport, "myop-runtime-integration");
  auto options = options_for(ns.name());
  std::atomic<int> gone_errors{0};
  options.watcher.on_error = [&](const kube::Error& error, std::chrono::milliseconds) {
    if (kube::is_gone(error)) ++gone_errors;
  };
  Informer informer(
      kube::make_client_watch_source(informer_client, kube::resources::config_maps(), ns.name()), options);
  Recorder recorder;
  recorder.attach(informer);
  informer.start();
  REQUIRE(eventually([&] { return informer.has_synced(); }));
  // kube-root-ca.crt is there too.
  CHECK(informer.cache().size() >= 2000);
  REQUIRE(eventually([&] { return cached(informer) == fresh_list(*client, ns.name()); }));

  SECTION("no managedFields or last-applied-configuration in the cache") {
    for (const auto& object : informer.cache().list()) {
      REQUIRE(object->view().find({"metadata", "managedFields"}) == nullptr);
      REQUIRE_FALSE(object->view().annotation("kubectl.kubernetes.io/last-applied-configuration"));
    }
    // The server does keep them: the transform is what removed them.
    auto live = client->get(kube::resources::config_maps(), ns.name(), "cm-0");
    REQUIRE(live);
    CHECK(live.value()["metadata"].HasMember("managedFields"));
  }

  SECTION("changes during an API server restart are caught up") {
    testenv::kubectl_or_fail("label configmap cm-1 cm-2 changed=yes -n " + ns.name());
    testenv::restart_apiserver();
    testenv::kubectl_or_fail("label configmap cm-3 changed=after-restart -n " + ns.name());
    testenv::kubectl_or_fail("delete configmap cm-4 -n " + ns.name());
    CHECK(eventually([&] { return cached(informer) == fresh_list(*client, ns.name()); }));
    CHECK(eventually([&] { return recorder.deleted_count() == 1; }));
  }

  SECTION("a forced 410 relists and diffs") {
    if (!testenv::owns_control_plane()) {
      FAIL("needs the control plane this test run starts (unset KUBECONFIG): it restarts kube-apiserver");
    }
    // Partition the informer, restart the API server (its watch cache starts afresh), change
    // things and compact etcd past the informer's resourceVersion: the resumed watch must get
    // 410 Gone, and the informer must relist and diff.
    transport->cut();
    testenv::restart_apiserver();
    testenv::kubectl_or_fail("delete configmap cm-10 cm-11 cm-12 -n " + ns.name());
    testenv::kubectl_or_fail("label configmap cm-13 changed=before-compaction -n " + ns.name());
    for (int i = 0; i < 50; ++i)
      testenv::kubectl_or_fail("label configmap cm-20 round=" + std::to_string(i) + " --overwrite -n " +
                               ns.name());
    testenv::compact_etcd();
    testenv::restart_apiserver();
    transport->reconnect();
    testenv::kubectl_or_fail("label configmap cm-14 changed=after-compaction -n " + ns.name());
    CHECK(eventually([&] { return cached(informer) == fresh_list(*client, ns.name()); }));
    CHECK(eventually([&] { return recorder.deleted_count() == 3; }));
    CHECK(gone_errors > 0);
  }

  SECTION("deletes made while the informer was not watching are delivered as deletes") {
    informer.stop();
    testenv::kubectl_or_fail("delete configmap -l set=bulk --field-selector metadata.name!=cm-0 -n " +
                             ns.name() + " --wait=false");
    REQUIRE(eventually([&] { return fresh_list(*client, ns.name()).size() <= 2; }));
    informer.start();
    CHECK(eventually([&] { return cached(informer) == fresh_list(*client, ns.name()); }));
    CHECK(recorder.deleted_count() == 1999);
  }
  informer.stop();
}

TEST_CASE("read-your-own-writes: the cached writer's answer is in the cache before the watch delivers it",
          "[runtime][informer][writer]") {
  testenv::ScopedNamespace ns("rt-ryow");
  auto client = admin_client();
  create_config_maps(*client, ns.name(), 1, "ryow-");
  auto registry = std::make_shared<InformerRegistry>(client);
  auto informers = registry->informer(kube::resources::config_maps(), {{ns.name()}, "", ""});
  // A second informer of the same kind whose selector the object does not match: never fed.
  auto labelled = registry->informer(kube::resources::config_maps(), {{ns.name()}, "team=nobody", ""});
  Writer writer(client, registry, "ryow-test");
  registry->start();
  REQUIRE(eventually([&] { return registry->has_synced(); }));
  REQUIRE(eventually([&] { return informers->get({ns.name(), "ryow-0"}) != nullptr; }));

  for (int round = 0; round < 20; ++round) {
    const std::string patch = R"({"data":{"round":")" + std::to_string(round) + R"("}})";
    auto written =
        writer.patch(kube::resources::config_maps(), {ns.name(), "ryow-0"}, kube::PatchType::Merge, patch);
    REQUIRE(written);
    // Immediately, without waiting for the watch: the cache is at least as new as our write, and
    // the writer returned the object as stored.
    auto after = informers->get({ns.name(), "ryow-0"});
    REQUIRE(after);
    const auto* round_value = after->view().find({"data", "round"});
    REQUIRE(round_value);
    CHECK(std::string(round_value->GetString()) == std::to_string(round));
    const auto* returned_round = written.value()->view().find({"data", "round"});
    REQUIRE(returned_round);
    CHECK(std::string(returned_round->GetString()) == std::to_string(round));
    CHECK(labelled->get({ns.name(), "ryow-0"}) == nullptr);
  }
  auto removed = writer.remove(kube::resources::config_maps(), {ns.name(), "ryow-0"});
  REQUIRE(removed);
  CHECK(removed.value() == nullptr);  // gone at once: no finalizer holds a ConfigMap
  CHECK(informers->get({ns.name(), "ryow-0"}) == nullptr);
  auto again = writer.remove(kube::resources::config_maps(), {ns.name(), "ryow-0"});
  REQUIRE_FALSE(again);
  CHECK(kube::is_not_found(again.error()));
  registry->stop();
}
