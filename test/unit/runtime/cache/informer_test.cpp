#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/packed_object.h"
#include "kube/resource.h"
#include "runtime/cache/informer.h"
#include "runtime/cache/informer_set.h"
#include "support/fake_clock.h"
#include "support/log_capture.h"
#include "support/object_builder.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;
using myop::testing::FakeClock;

namespace {

kube::Object config_map(const std::string& namespace_name, const std::string& name,
                        const std::string& version, const std::string& extra_metadata = "") {
  auto parsed = kube::Object::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":")" +
                                    namespace_name + R"(","name":")" + name + R"(","resourceVersion":")" +
                                    version + "\"" + extra_metadata + R"(},"data":{"k":"v"}})");
  REQUIRE(parsed);
  return std::move(parsed).value();
}

kube::WatcherEvent watcher_event(kube::WatcherEventType type,
                                 std::optional<kube::Object> object = std::nullopt) {
  kube::WatcherEvent event;
  event.type = type;
  event.object = std::move(object);
  return event;
}

struct Recorded {
  EventType type;
  std::string name;
  std::string version;
  std::string old_version;
  bool initial_list;
};

InformerOptions informer_options(kube::WatcherOptions watch) {
  InformerOptions options;
  options.name = "configmaps";
  options.watcher = std::move(watch);
  return options;
}

struct Fixture {
  Informer informer;
  std::vector<Recorded> events;
  explicit Fixture(kube::WatcherOptions watch = {}) : informer(nullptr, informer_options(std::move(watch))) {
    informer.subscribe([this](const ObjectEvent& event) {
      events.push_back(
          {event.type, std::string(event.object->name()), std::string(event.object->resource_version()),
           event.old_object ? std::string(event.old_object->resource_version()) : "", event.initial_list});
    });
  }
  void list(std::vector<kube::Object> objects) {
    informer.handle(watcher_event(kube::WatcherEventType::InitStart));
    for (auto& object : objects)
      informer.handle(watcher_event(kube::WatcherEventType::InitApply, std::move(object)));
    informer.handle(watcher_event(kube::WatcherEventType::InitDone));
  }
  std::string cached_version(const std::string& name) {
    auto object = informer.cache().get({"ns", name});
    return object ? std::string(object->resource_version()) : "<none>";
  }
};

std::vector<kube::Object> objects(
    std::initializer_list<std::pair<const char*, const char*>> names_and_versions) {
  std::vector<kube::Object> result;
  for (const auto& [name, version] : names_and_versions) result.push_back(config_map("ns", name, version));
  return result;
}

}  // namespace

TEST_CASE("the informer is synced only after the initial state, delivered at low priority",
          "[runtime][informer]") {
  Fixture fixture;
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitStart));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitApply, config_map("ns", "a", "1")));
  CHECK_FALSE(fixture.informer.has_synced());
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitDone));
  CHECK(fixture.informer.has_synced());
  REQUIRE(fixture.events.size() == 1);
  CHECK(fixture.events[0].type == EventType::added);
  CHECK(fixture.events[0].initial_list);
}

TEST_CASE("a relist is diffed: changes as updates, missing objects as deletes", "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "1"}, {"b", "1"}, {"c", "1"}}));
  fixture.events.clear();
  fixture.list(objects({{"a", "1"}, {"b", "2"}, {"d", "5"}}));
  REQUIRE(fixture.events.size() == 3);
  CHECK(fixture.events[0].type == EventType::updated);
  CHECK(fixture.events[0].name == "b");
  CHECK(fixture.events[0].old_version == "1");
  CHECK(fixture.events[1].type == EventType::added);
  CHECK(fixture.events[1].name == "d");
  CHECK_FALSE(fixture.events[1].initial_list);
  CHECK(fixture.events[2].type == EventType::deleted);
  CHECK(fixture.events[2].name == "c");
  CHECK(fixture.informer.cache().size() == 3);
  CHECK(fixture.cached_version("c") == "<none>");
}

TEST_CASE("an initial state that restarts midway drops nothing it should keep", "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "1"}, {"b", "1"}}));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitStart));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitApply, config_map("ns", "a", "1")));
  // The attempt failed; a new one starts and completes.
  fixture.list(objects({{"b", "1"}, {"a", "1"}}));
  CHECK(fixture.informer.cache().size() == 2);
}

TEST_CASE("watch events apply in order, deletes are delivered", "[runtime][informer]") {
  Fixture fixture;
  fixture.list({});
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "1")));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "2")));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Delete, config_map("ns", "a", "3")));
  REQUIRE(fixture.events.size() == 3);
  CHECK(fixture.events[0].type == EventType::added);
  CHECK(fixture.events[1].type == EventType::updated);
  CHECK(fixture.events[1].old_version == "1");
  CHECK(fixture.events[2].type == EventType::deleted);
  CHECK(fixture.informer.cache().size() == 0);
}

TEST_CASE("the default transform drops managedFields and last-applied-configuration", "[runtime][informer]") {
  Fixture fixture;
  std::vector<kube::Object> listed;
  listed.push_back(
      config_map("ns", "a", "1",
                 R"(,"managedFields":[{"manager":"kubectl","operation":"Apply"}],)"
                 R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","keep":"me"})"));
  fixture.list(std::move(listed));
  auto cached = fixture.informer.cache().get({"ns", "a"});
  REQUIRE(cached);
  CHECK(cached->view().find({"metadata", "managedFields"}) == nullptr);
  CHECK_FALSE(cached->view().annotation("kubectl.kubernetes.io/last-applied-configuration"));
  CHECK(cached->view().annotation("keep") == std::optional<std::string_view>("me"));
}

TEST_CASE("read-your-own-writes: a write result enters the cache and older events cannot undo it",
          "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}}));
  fixture.events.clear();
  auto written = config_map("ns", "a", "12");
  CHECK(fixture.informer.store_written(written.json(), "10") != nullptr);
  CHECK(fixture.cached_version("a") == "12");
  CHECK(fixture.events.empty());
  // Someone else's patch landed between our read and our write; its event arrives first.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "11")));
  CHECK(fixture.cached_version("a") == "12");
  // Our own write's event: subscribers see the change from what they last saw.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "12")));
  REQUIRE(fixture.events.size() == 1);
  CHECK(fixture.events[0].type == EventType::updated);
  CHECK(fixture.events[0].old_version == "10");
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "13")));
  CHECK(fixture.cached_version("a") == "13");
}

TEST_CASE("read-your-own-writes never moves the cache backwards", "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}}));
  // The watch delivered our write (12) and a newer one (13) before the write call returned.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "12")));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "13")));
  auto written = config_map("ns", "a", "12");
  CHECK(fixture.informer.store_written(written.json(), "10") == nullptr);
  CHECK(fixture.cached_version("a") == "13");
  // Creates are based on nothing.
  auto created = config_map("ns", "new", "20");
  CHECK(fixture.informer.store_written(created.json(), "") != nullptr);
  CHECK(fixture.cached_version("new") == "20");
}

TEST_CASE(
    "read-your-own-writes: an open write is taken when the watch delivered only older versions while it "
    "was in flight",
    "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}}));
  fixture.events.clear();
  CHECK(fixture.informer.begin_write({"ns", "a"}) == "10");
  // A status change of the Deployment (someone else's write, older than ours) arrives while our spec
  // write is in flight: the cache moves on to it, and subscribers hear of it.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "11")));
  CHECK(fixture.cached_version("a") == "11");
  auto written = config_map("ns", "a", "12");
  CHECK(fixture.informer.store_written(written.json(), "10") != nullptr);
  fixture.informer.end_write({"ns", "a"});
  CHECK(fixture.cached_version("a") == "12");
  // Our write's event: subscribers see it after the 11 they were told of.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "12")));
  REQUIRE(fixture.events.size() == 2);
  CHECK(fixture.events[1].old_version == "11");
  CHECK(fixture.events[1].version == "12");

  // Without begin_write the writer cannot tell older from newer: the cache keeps what the watch gave.
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "13")));
  auto unopened = config_map("ns", "a", "14");
  CHECK(fixture.informer.store_written(unopened.json(), "12") == nullptr);
  CHECK(fixture.cached_version("a") == "13");
}

TEST_CASE(
    "read-your-own-writes: an open write is not taken when the watch delivered it, a delete or a relist "
    "meanwhile",
    "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}, {"b", "10"}, {"c", "10"}}));
  // A write of `name` sent at version 10, `meanwhile` delivered by the watch, then its answer at
  // `written`: refused, the cache keeps `kept`.
  const auto refused = [&](const std::string& name, const std::function<void()>& meanwhile,
                           const std::string& written, const std::string& kept) {
    const ObjectKey key{"ns", name};
    CHECK(fixture.informer.begin_write(key) == "10");
    meanwhile();
    auto answer = config_map("ns", name, written);
    CHECK(fixture.informer.store_written(answer.json(), "10") == nullptr);
    fixture.informer.end_write(key);
    CHECK(fixture.cached_version(name) == kept);
  };
  const auto apply = [&](const std::string& name, const std::string& version) {
    fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", name, version)));
  };

  // The watch delivered our write (12) and a newer version (13) before the answer came back.
  refused(
      "a",
      [&] {
        apply("a", "12");
        apply("a", "13");
      },
      "12", "13");
  // Deleted after our write: the delete comes after it, so our write is not the newest.
  refused(
      "b",
      [&] {
        fixture.informer.handle(watcher_event(kube::WatcherEventType::Delete, config_map("ns", "b", "15")));
      },
      "14", "<none>");
  // A relist may hold a state newer than our write without delivering our version.
  refused(
      "c",
      [&] {
        fixture.list(objects({{"a", "13"}, {"c", "17"}}));
      },
      "16", "17");

  // Closed writes are forgotten: after end_write, a later answer is judged the old way.
  const ObjectKey c{"ns", "c"};
  CHECK(fixture.informer.begin_write(c) == "17");
  fixture.informer.end_write(c);
  apply("c", "18");
  auto late = config_map("ns", "c", "19");
  CHECK(fixture.informer.store_written(late.json(), "17") == nullptr);
  CHECK(fixture.cached_version("c") == "18");
}

TEST_CASE("a write the server found to be a no-op waits for no echo: the next change still arrives",
          "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}}));
  fixture.events.clear();
  // An apply or patch that changed nothing: the server answers with the stored object, same version,
  // and the watch will never carry it.
  auto unchanged = config_map("ns", "a", "10");
  CHECK(fixture.informer.store_written(unchanged.json(), "10") != nullptr);
  CHECK(fixture.cached_version("a") == "10");
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "11")));
  CHECK(fixture.cached_version("a") == "11");
  REQUIRE(fixture.events.size() == 1);
  CHECK(fixture.events[0].type == EventType::updated);
}

TEST_CASE("read-your-own-writes for deletes", "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "10"}}));
  fixture.events.clear();
  fixture.informer.store_deleted({"ns", "a"}, "9");  // sent at a version the cache no longer holds
  CHECK(fixture.cached_version("a") == "10");
  fixture.informer.store_deleted({"ns", "a"}, "10");
  CHECK(fixture.cached_version("a") == "<none>");
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Apply, config_map("ns", "a", "11")));
  CHECK(fixture.cached_version("a") == "<none>");
  fixture.informer.handle(watcher_event(kube::WatcherEventType::Delete, config_map("ns", "a", "12")));
  REQUIRE(fixture.events.size() == 1);
  CHECK(fixture.events[0].type == EventType::deleted);
}

TEST_CASE("read-your-own-writes follows the informer's selectors", "[runtime][informer]") {
  kube::WatcherOptions watch;
  watch.label_selector = "team=a";
  Fixture fixture(watch);
  fixture.list({});
  // Written with the label: it belongs here.
  auto labelled = config_map("ns", "a", "5", R"(,"labels":{"team":"a"})");
  auto stored = fixture.informer.store_written(labelled.json(), "");
  REQUIRE(stored != nullptr);
  CHECK(fixture.cached_version("a") == "5");
  CHECK(fixture.informer.cached_resource_version({"ns", "a"}) == "5");
  // A write that took the label away takes the object out of this informer's view.
  auto unlabelled = config_map("ns", "a", "6", R"(,"labels":{"team":"b"})");
  CHECK(fixture.informer.store_written(unlabelled.json(), "5") == nullptr);
  CHECK(fixture.cached_version("a") == "<none>");
  // Never one that did not match to begin with.
  auto other = config_map("ns", "b", "7");
  CHECK(fixture.informer.store_written(other.json(), "") == nullptr);
  CHECK(fixture.cached_version("b") == "<none>");
}

TEST_CASE("resync re-delivers every cached object", "[runtime][informer]") {
  Fixture fixture;
  fixture.list(objects({{"a", "1"}, {"b", "1"}}));
  fixture.events.clear();
  fixture.informer.resync();
  REQUIRE(fixture.events.size() == 2);
  CHECK(fixture.events[0].type == EventType::resync);
}

namespace {

// A collection whose watch stays open, quiet, until stopped.
class QuietSource final : public kube::WatchSource {
 public:
  kube::Result<rapidjson::Document> list(const kube::ListOptions&, std::stop_token stop) override {
    wait_for_stop(stop);
    return kube::make_error(kube::Reason::Cancelled, "stopped");
  }
  kube::Result<kube::StreamEnd> watch(const kube::WatchOptions&, const kube::ChunkHandler&,
                                      std::stop_token stop) override {
    wait_for_stop(stop);
    return kube::make_error(kube::Reason::Cancelled, "stopped");
  }
  std::string describe() const override { return "configmaps, quietly"; }

 private:
  static void wait_for_stop(std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any stopped;
    std::unique_lock lock(mutex);
    stopped.wait(lock, stop, [] { return false; });
  }
};

}  // namespace

TEST_CASE("the resync thread sleeps until a resync is due, then re-delivers", "[runtime][informer]") {
  auto clock = std::make_shared<FakeClock>();
  InformerOptions options;
  options.name = "configmaps";
  options.clock = clock;
  options.resync_period = 10h;
  options.resync_jitter = 0;
  Informer informer(std::make_shared<QuietSource>(), options);
  std::mutex mutex;
  std::condition_variable delivered;
  int resyncs = 0;
  informer.subscribe([&](const ObjectEvent& event) {
    if (event.type != EventType::resync) return;
    std::lock_guard lock(mutex);
    ++resyncs;
    delivered.notify_all();
  });
  informer.handle(watcher_event(kube::WatcherEventType::InitStart));
  informer.handle(watcher_event(kube::WatcherEventType::InitApply, config_map("ns", "a", "1")));
  informer.handle(watcher_event(kube::WatcherEventType::InitDone));
  REQUIRE(informer.has_synced());

  informer.start();
  // One timer, for when the resync is due; nothing wakes before it.
  REQUIRE(clock->await_deadline(clock->now() + 10h));
  clock->advance(10h - 1s);
  CHECK(clock->deadlines() == std::vector<TimePoint>{clock->now() + 1s});
  clock->advance(1s);
  {
    std::unique_lock lock(mutex);
    REQUIRE(delivered.wait_for(lock, 10s, [&] { return resyncs == 1; }));
  }
  // The next one is a period after this one.
  REQUIRE(clock->await_deadline(clock->now() + 10h));
  informer.stop();
  std::lock_guard lock(mutex);
  CHECK(resyncs == 1);
}

TEST_CASE("on_synced calls back once the initial state is complete, or at once when it is",
          "[runtime][informer]") {
  Fixture fixture;
  int calls = 0;
  fixture.informer.on_synced([&] { ++calls; });
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitStart));
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitApply, config_map("ns", "a", "1")));
  CHECK(calls == 0);
  fixture.informer.handle(watcher_event(kube::WatcherEventType::InitDone));
  CHECK(calls == 1);
  fixture.list(objects({{"a", "2"}}));  // a relist does not call again
  CHECK(calls == 1);
  fixture.informer.on_synced([&] { ++calls; });
  CHECK(calls == 2);
}

TEST_CASE("the cache indexes by namespace, controller owner and label", "[runtime][cache]") {
  ObjectCache cache(CacheOptions{.indexed_labels = {"app"}});
  cache.put(runtime::testing::make_object(
      R"({"metadata":{"namespace":"a","name":"x","labels":{"app":"web"},"ownerReferences":[{"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","name":"o","uid":"uid-1","controller":true}]}})"));
  cache.put(
      runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":"y","labels":{"app":"db"}}})"));
  cache.put(
      runtime::testing::make_object(R"({"metadata":{"namespace":"b","name":"z","labels":{"app":"web"}}})"));
  CHECK(cache.list_namespace("a").size() == 2);
  CHECK(cache.list_namespace("b").size() == 1);
  CHECK(cache.list_namespace("").empty());
  CHECK(cache.list_by_controller_owner("uid-1").size() == 1);
  CHECK(cache.list_by_label("app", "web").size() == 2);
  // Relabel: the index follows.
  cache.put(
      runtime::testing::make_object(R"({"metadata":{"namespace":"b","name":"z","labels":{"app":"db"}}})"));
  CHECK(cache.list_by_label("app", "web").size() == 1);
  CHECK(cache.list_by_label("app", "db").size() == 2);
  cache.erase({"a", "x"});
  CHECK(cache.list_by_controller_owner("uid-1").empty());
  CHECK(cache.list_by_label("app", "web").empty());
}

TEST_CASE("a pass over the cache holds one unpacked object at a time", "[runtime][cache]") {
  // One hot object: "c" stays parsed, "a" and "b" are packed and unpacked for the pass.
  ObjectCache cache(CacheOptions{.indexed_labels = {}, .hot_objects = 1});
  for (const char* name : {"a", "b", "c"}) {
    cache.put(runtime::testing::make_object(std::string(R"({"metadata":{"namespace":"ns","name":")") + name +
                                            R"(","resourceVersion":"1"}})"));
  }
  const ObjectPointer hot = cache.get({"ns", "c"});
  std::vector<std::string> names;
  std::vector<std::weak_ptr<const kube::Object>> visited;
  std::size_t alive_during_visits = 0;  // earlier unpacked objects still alive at a later visit
  cache.for_each([&](const ObjectPointer& object) {
    for (const auto& earlier : visited) alive_during_visits += earlier.expired() ? 0 : 1;
    names.emplace_back(object->name());
    if (object != hot) visited.emplace_back(object);
  });
  CHECK(names == std::vector<std::string>{"a", "b", "c"});
  CHECK(visited.size() == 2);
  CHECK(alive_during_visits == 0);
  CHECK(std::all_of(visited.begin(), visited.end(), [](const auto& object) { return object.expired(); }));
  // The pass made nothing hot: "c" is still the one parsed object.
  CHECK(cache.get({"ns", "c"}) == hot);
  CHECK(cache.list().size() == 3);
}

TEST_CASE("caches that share a packer read their own objects back", "[runtime][cache]") {
  auto packer = std::make_shared<kube::ObjectPacker>();
  ObjectCache first(CacheOptions{.indexed_labels = {}, .hot_objects = 0, .packer = packer});
  ObjectCache second(CacheOptions{.indexed_labels = {}, .hot_objects = 0, .packer = packer});
  const auto object = [](const char* name, const char* data) {
    return runtime::testing::make_object(std::string(R"({"metadata":{"namespace":"ns","name":")") + name +
                                         R"(","resourceVersion":"1"},"data":{"k":")" + data + R"("}})");
  };
  first.put(object("a", "the first object packed chooses the dictionary"));
  const std::size_t dictionary = packer->dictionary_size();
  CHECK(dictionary > 0);
  second.put(object("b", "packed against the first cache's object"));
  CHECK(packer->dictionary_size() == dictionary);  // chosen once, for both
  const ObjectPointer a = first.get({"ns", "a"});
  const ObjectPointer b = second.get({"ns", "b"});
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->to_json_string() ==
        object("a", "the first object packed chooses the dictionary")->to_json_string());
  CHECK(b->to_json_string() == object("b", "packed against the first cache's object")->to_json_string());
  CHECK(first.get({"ns", "b"}) == nullptr);
  CHECK(second.get({"ns", "a"}) == nullptr);
}

TEST_CASE("the cache keeps objects packed, and the last used ones parsed", "[runtime][cache]") {
  const std::string json =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"a","name":"x","resourceVersion":"7",)"
      R"("labels":{"app":"web"}},"data":{"k":"a value long enough to be copied into the tree's pool"}})";
  const std::string expected = runtime::testing::make_object(json)->to_json_string();

  SECTION("without hot objects every read unpacks a copy of its own") {
    ObjectCache cache(CacheOptions{.indexed_labels = {}, .hot_objects = 0});
    ObjectPointer stored = runtime::testing::make_object(json);
    cache.put(stored);
    ObjectPointer first = cache.get({"a", "x"});
    ObjectPointer second = cache.get({"a", "x"});
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first != stored);
    CHECK(first != second);
    CHECK(first->to_json_string() == expected);
    CHECK(second->to_json_string() == expected);
    CHECK(cache.packed_bytes() > 0);
    CHECK(cache.packed_bytes() < first->allocated_bytes());
  }

  SECTION("the object stored last is read without unpacking until it cools") {
    ObjectCache cache(CacheOptions{.indexed_labels = {}, .hot_objects = 2});
    ObjectPointer stored = runtime::testing::make_object(json);
    cache.put(stored);
    CHECK(cache.get({"a", "x"}) == stored);
    cache.put(runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":"y"}})"));
    CHECK(cache.get({"a", "x"}) == stored);  // read again: now the most recent
    cache.put(runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":"z"}})"));
    CHECK(cache.get({"a", "x"}) == stored);
    cache.get({"a", "y"});  // unpacked and made hot: x is now the coldest of y, z, x... and goes
    ObjectPointer unpacked = cache.get({"a", "z"});
    ObjectPointer cold = cache.get({"a", "x"});
    REQUIRE(cold);
    CHECK(cold != stored);
    CHECK(cold->to_json_string() == expected);
    CHECK(cache.get({"a", "x"}) == cold);  // that read made it hot again
  }

  SECTION("replacing, taking and erasing") {
    ObjectCache cache;
    cache.put(runtime::testing::make_object(json));
    CHECK(cache.resource_version({"a", "x"}) == "7");
    CHECK(cache.resource_version({"a", "missing"}).empty());
    ObjectPointer first = cache.get({"a", "x"});
    ObjectPointer previous = cache.exchange(runtime::testing::make_object(
        R"({"metadata":{"namespace":"a","name":"x","resourceVersion":"8","labels":{"app":"db"}}})"));
    REQUIRE(previous);
    CHECK(previous->resource_version() == "7");
    CHECK(cache.resource_version({"a", "x"}) == "8");
    CHECK(first->resource_version() == "7");  // a reader's object does not change under it
    CHECK_FALSE(
        cache.exchange(runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":"y"}})")));

    ObjectPointer taken = cache.take({"a", "x"});
    REQUIRE(taken);
    CHECK(taken->resource_version() == "8");
    CHECK_FALSE(cache.take({"a", "x"}));
    CHECK(cache.erase({"a", "y"}));
    CHECK_FALSE(cache.erase({"a", "y"}));
    CHECK(cache.size() == 0);
    CHECK(cache.packed_bytes() == 0);
  }
}

TEST_CASE("the cache's hot objects stay bounded while threads read and write", "[runtime][cache]") {
  ObjectCache cache(CacheOptions{.indexed_labels = {}, .hot_objects = 8});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const std::string name = "o" + std::to_string((i * 7 + t) % 40);
        if (t % 2 == 0) {
          cache.put(runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":")" + name +
                                                  R"(","resourceVersion":")" + std::to_string(i) + R"("}})"));
        } else if (i % 10 == 0) {
          cache.erase({"a", name});
        } else if (auto object = cache.get({"a", name}); object && object->name() != name) {
          ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  for (const auto& object : cache.list())
    CHECK(cache.get({std::string(object->namespace_name()), std::string(object->name())}));
}

TEST_CASE("the cache indexes a label asked for later and looks up the others by reading",
          "[runtime][cache]") {
  ObjectCache cache;
  for (const char* name : {"p", "q", "r"}) {
    cache.put(runtime::testing::make_object(R"({"metadata":{"namespace":"a","name":")" + std::string(name) +
                                            R"(","labels":{"track":")" +
                                            (name[0] == 'r' ? "canary" : "stable") + R"("}}})"));
  }
  // Not indexed: answered by reading every object.
  CHECK(cache.count_by_label("track", "stable") == 2);
  CHECK(cache.list_by_label("track", "canary").size() == 1);
  cache.index_label("track");
  CHECK(cache.count_by_label("track", "stable") == 2);
  CHECK(cache.count_by_label("track", "canary") == 1);
  cache.put(runtime::testing::make_object(
      R"({"metadata":{"namespace":"a","name":"p","labels":{"track":"canary"}}})"));
  CHECK(cache.count_by_label("track", "stable") == 1);
  CHECK(cache.count_by_label("track", "canary") == 2);
  cache.erase({"a", "r"});
  CHECK(cache.count_by_label("track", "canary") == 1);
  CHECK(cache.list_by_label("track", "canary").front()->name() == "p");
  CHECK(cache.count_by_label("track", "gone") == 0);
}

TEST_CASE("a sharded set's slots are redelivered on opening unless only owned objects are in it",
          "[runtime][sharding]") {
  const auto set = [] {
    InformerOptions options;
    options.name = "deployments";
    return std::make_shared<InformerSet>(nullptr, kube::resources::deployments(), InformerSet::Sharded{},
                                         options);
  };
  auto unwatched = set();
  CHECK(unwatched->redelivered_on_open());  // for whoever subscribed

  auto owned = set();
  owned->watched_as(InformerSet::WatchedAs::owned);
  CHECK_FALSE(owned->redelivered_on_open());

  auto primary = set();
  primary->watched_as(InformerSet::WatchedAs::primary);
  CHECK(primary->redelivered_on_open());

  // Owned by one controller, the primary kind of another: that one needs its reconciles.
  auto both = set();
  both->watched_as(InformerSet::WatchedAs::owned);
  both->watched_as(InformerSet::WatchedAs::primary);
  CHECK(both->redelivered_on_open());
}

TEST_CASE("an informer whose watch cannot be reopened reports it until the watch works again",
          "[runtime][informer]") {
  myop::testing::LogCapture logs;
  auto clock = std::make_shared<FakeClock>();
  std::vector<bool> transitions;
  InformerOptions options = informer_options({});
  options.clock = clock;
  options.on_failing = [&](bool failing) { transitions.push_back(failing); };
  Informer informer(nullptr, options);
  informer.handle(watcher_event(kube::WatcherEventType::InitStart));
  informer.handle(watcher_event(kube::WatcherEventType::InitDone));
  REQUIRE(informer.has_synced());

  const auto refused = kube::make_error(
      kube::Reason::TooManyRequests,
      "storage is (re)initializing: conversion webhook for myorg.io/v1beta1, Kind=MyResource failed", 429);
  informer.watch_failed(refused);
  CHECK(informer.problems().empty());  // one failure: the next attempt decides
  clock->advance(2s);
  informer.watch_failed(refused);
  const auto problems = informer.problems();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::StartsWith("configmaps ("));
  CHECK_THAT(problems[0], Catch::Contains("list and watch failing: 2 attempts in a row failed over 2 s"));
  CHECK_THAT(problems[0], Catch::Contains("conversion webhook for myorg.io/v1beta1, Kind=MyResource failed"));
  CHECK(informer.has_synced());  // synced stays true: problems() is what says it is stale
  CHECK(transitions == std::vector<bool>{true});
  CHECK_THAT(logs.text(), Catch::Contains("Informer failing"));

  // An event or a bookmark shows the watch works again.
  informer.handle(watcher_event(kube::WatcherEventType::Bookmark));
  CHECK(informer.problems().empty());
  CHECK(transitions == std::vector<bool>{true, false});
  CHECK_THAT(logs.text(), Catch::Contains("Informer recovered"));

  // Stopped while failing: on_failing(false), so a gauge of failing informers does not keep it.
  informer.watch_failed(refused);
  informer.watch_failed(refused);
  informer.stop();
  CHECK(transitions == std::vector<bool>{true, false, true, false});
  CHECK(informer.problems().empty());
}
