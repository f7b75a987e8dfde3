// The cached writer (runtime/controller/writer.h) over an in-memory API server: every verb's answer is in the
// cache before the call returns, the fence is asked before anything is sent, remove() tells an object
// still held by finalizers from one that is gone, and API errors (404, 409) come back unchanged. The
// real API server and watch are in test/integration/runtime/cache/informer_test.cpp.
#include "runtime/controller/writer.h"

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/resource.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/sharding/shard_gate.h"
#include "support/fake_clock.h"
#include "support/in_memory_api_server.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::testing::FakeClock;
using myop::testing::InMemoryApiServer;

namespace {

constexpr const char* kNamespace = "team-a";
constexpr const char* kFieldManager = "writer-test";

std::string config_map_path(const std::string& name, const std::string& namespace_name = kNamespace) {
  return "/api/v1/namespaces/" + namespace_name + "/configmaps/" + name;
}

kube::Object config_map(const std::string& name, const std::string& extra_metadata = "",
                        const std::string& namespace_name = kNamespace) {
  auto parsed = kube::Object::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                                    R"(","namespace":")" + namespace_name + "\"" + extra_metadata +
                                    R"(},"data":{"k":"v"}})");
  REQUIRE(parsed);
  return std::move(parsed).value();
}

// The operator's writer and the cache of ConfigMaps in team-a it feeds (a registry never started: no
// watch, the cache holds only what the writer put there). "someone-else" writes beside it.
struct Fixture {
  std::shared_ptr<InMemoryApiServer> server = std::make_shared<InMemoryApiServer>();
  std::shared_ptr<kube::Client> client =
      std::make_shared<kube::Client>(server->transport("operator"), kFieldManager);
  std::shared_ptr<kube::Client> someone_else =
      std::make_shared<kube::Client>(server->transport("someone-else"), "someone-else");
  std::shared_ptr<InformerRegistry> registry = std::make_shared<InformerRegistry>(client);
  std::shared_ptr<InformerSet> cache =
      registry->informer(kube::resources::config_maps(), InformerScope{{kNamespace}, "", ""});
  Writer writer{client, registry, kFieldManager};

  ObjectPointer cached(const std::string& name) const { return cache->get({kNamespace, name}); }
  std::string cached_version(const std::string& name) const {
    const auto object = cached(name);
    return object ? std::string(object->resource_version()) : "<none>";
  }
  std::string stored_version(const std::string& name) const {
    return server->exists(config_map_path(name))
               ? std::string(server->object(config_map_path(name)).resource_version())
               : "<none>";
  }
  // Creates `name` through the writer (so it is cached); returns what the writer returned.
  ObjectPointer created(const std::string& name, const std::string& extra_metadata = "") {
    auto result = writer.create(kube::resources::config_maps(), config_map(name, extra_metadata));
    REQUIRE(result);
    REQUIRE(result.value());
    return result.value();
  }
  std::size_t requests() const { return server->requests("operator").size(); }
};

}  // namespace

TEST_CASE("every verb's answer is in the cache when the call returns", "[runtime][writer]") {
  Fixture fixture;
  const auto type = kube::resources::config_maps();

  const auto created = fixture.created("settings");
  CHECK(created->resource_version() == fixture.stored_version("settings"));
  CHECK(fixture.cached_version("settings") == fixture.stored_version("settings"));

  auto patched = fixture.writer.patch(type, {kNamespace, "settings"}, kube::PatchType::Merge,
                                      R"({"data":{"k":"patched"}})");
  REQUIRE(patched);
  CHECK(fixture.cached_version("settings") == fixture.stored_version("settings"));
  const auto* data = fixture.cached("settings")->view().find({"data", "k"});
  REQUIRE(data != nullptr);
  CHECK(std::string(data->GetString()) == "patched");

  auto applied = fixture.writer.apply(type, config_map("applied"));
  REQUIRE(applied);
  CHECK(fixture.cached_version("applied") == fixture.stored_version("applied"));
  // Server-side apply under the writer's field manager, taking over fields by default.
  const auto sent = fixture.server->requests("operator").back();
  CHECK(sent.method == "PATCH");
  CHECK(sent.content_type == "application/apply-patch+yaml");
  CHECK(sent.query == kube::QueryParameters{{"fieldManager", kFieldManager}, {"force", "true"}});

  auto finalized = fixture.writer.set_finalizers(type, *fixture.cached("settings"),
                                                 {"example.com/hold", "example.com/two"});
  REQUIRE(finalized);
  CHECK(fixture.cached("settings")->view().finalizers() ==
        std::vector<std::string_view>{"example.com/hold", "example.com/two"});
  CHECK(fixture.cached_version("settings") == fixture.stored_version("settings"));
}

TEST_CASE("remove: an object gone at once is null and leaves the cache, one held by finalizers stays",
          "[runtime][writer]") {
  Fixture fixture;
  const auto type = kube::resources::config_maps();

  SECTION("gone at once (the answer is a Status)") {
    fixture.created("plain");
    auto removed = fixture.writer.remove(type, {kNamespace, "plain"});
    REQUIRE(removed);
    CHECK(removed.value() == nullptr);
    CHECK(fixture.cached("plain") == nullptr);
    CHECK_FALSE(fixture.server->exists(config_map_path("plain")));
  }

  SECTION("gone at once (the answer is the object's last state, as for custom resources)") {
    fixture.server->set_delete_returns_object(true);
    fixture.created("plain");
    auto removed = fixture.writer.remove(type, {kNamespace, "plain"});
    REQUIRE(removed);
    CHECK(removed.value() == nullptr);
    CHECK(fixture.cached("plain") == nullptr);
  }

  SECTION("held by a finalizer: the object, being deleted, in the cache too") {
    fixture.created("held", R"(,"finalizers":["example.com/hold"])");
    auto removed = fixture.writer.remove(type, {kNamespace, "held"});
    REQUIRE(removed);
    REQUIRE(removed.value() != nullptr);
    CHECK(removed.value()->view().is_being_deleted());
    CHECK(fixture.server->exists(config_map_path("held")));
    REQUIRE(fixture.cached("held") != nullptr);
    CHECK(fixture.cached("held")->view().is_being_deleted());
    CHECK(fixture.cached_version("held") == fixture.stored_version("held"));

    // The last finalizer dropped: the server removes it.
    auto released = fixture.writer.set_finalizers(type, *fixture.cached("held"), {});
    REQUIRE(released);
    CHECK_FALSE(fixture.server->exists(config_map_path("held")));
  }

  SECTION("already gone: NotFound comes back as the error it is, and the cache drops its stale copy") {
    fixture.created("stale");
    fixture.server->erase(config_map_path("stale"));  // deleted by someone else; no watch told the cache
    REQUIRE(fixture.cached("stale") != nullptr);
    auto removed = fixture.writer.remove(type, {kNamespace, "stale"});
    REQUIRE_FALSE(removed);
    CHECK(kube::is_not_found(removed.error()));
    CHECK(removed.error().http_code == 404);
    CHECK(fixture.cached("stale") == nullptr);
  }

  SECTION("a precondition that no longer holds: Conflict, nothing deleted, the cache keeps the object") {
    const auto created = fixture.created("guarded");
    kube::DeleteOptions options;
    options.precondition_resource_version = std::string(created->resource_version());
    auto changed = fixture.someone_else->patch(type, kNamespace, "guarded", kube::PatchType::Merge,
                                               R"({"data":{"k":"theirs"}})");
    REQUIRE(changed);
    auto removed = fixture.writer.remove(type, {kNamespace, "guarded"}, options);
    REQUIRE_FALSE(removed);
    CHECK(kube::is_conflict(removed.error()));
    CHECK(fixture.server->exists(config_map_path("guarded")));
    CHECK(fixture.cached_version("guarded") == std::string(created->resource_version()));
  }
}

TEST_CASE("a stale resourceVersion is a Conflict returned unchanged: nothing written, the cache untouched",
          "[runtime][writer]") {
  Fixture fixture;
  const auto type = kube::resources::config_maps();
  const auto before = fixture.created("contested");
  // Someone else changes it; the cache (no watch here) still holds the version before.
  auto theirs = fixture.someone_else->patch(type, kNamespace, "contested", kube::PatchType::Merge,
                                            R"({"metadata":{"finalizers":["example.com/theirs"]}})");
  REQUIRE(theirs);
  const std::string stored = fixture.stored_version("contested");

  auto ours = fixture.writer.set_finalizers(type, *before, {"example.com/ours"});
  REQUIRE_FALSE(ours);
  CHECK(kube::is_conflict(ours.error()));
  CHECK(ours.error().http_code == 409);
  CHECK(fixture.stored_version("contested") == stored);  // their finalizer is not dropped
  CHECK(fixture.server->object(config_map_path("contested")).view().finalizers() ==
        std::vector<std::string_view>{"example.com/theirs"});
  CHECK(fixture.server->writes("operator", config_map_path("contested")).size() == 1);  // the create only
  CHECK(fixture.cached_version("contested") == std::string(before->resource_version()));

  // A create of an object that exists is AlreadyExists, not a Conflict.
  auto again = fixture.writer.create(type, config_map("contested"));
  REQUIRE_FALSE(again);
  CHECK(kube::is_already_exists(again.error()));
}

// The fence the manager sets under sharding (shard_fence): writes of a namespaced object only while its
// shard slot is this replica's and the membership deadline has not passed.
TEST_CASE("a write the fence refuses is not sent: its error comes back and the cache is untouched",
          "[runtime][writer][sharding]") {
  Fixture fixture;
  const auto type = kube::resources::config_maps();
  auto clock = std::make_shared<FakeClock>();
  auto gate = std::make_shared<ShardGate>(kShardSlots, clock);
  std::vector<ObjectKey> asked;
  fixture.writer.set_fence(
      [&, fence = shard_fence(gate)](const kube::ResourceType& fenced, const ObjectKey& key) {
        asked.push_back(key);
        return fence(fenced, key);
      });
  const int slot = shard_slot(kNamespace);
  gate->activate(slot);
  gate->extend_deadline(clock->now() + 10s);
  const auto created = fixture.created("fenced", R"(,"finalizers":["example.com/hold"])");
  REQUIRE(asked.size() == 1);
  CHECK(asked.front() == ObjectKey{kNamespace, "fenced"});

  // Every verb, refused alike. `why` says what took the slot away.
  const auto every_verb_refused = [&](const std::string& why) {
    INFO(why);
    const std::size_t sent_before = fixture.requests();
    const std::size_t asked_before = asked.size();
    const std::string cached_before = fixture.cached_version("fenced");
    const std::string stored_before = fixture.stored_version("fenced");
    std::vector<kube::Result<ObjectPointer>> results;
    results.push_back(fixture.writer.create(type, config_map("another")));
    results.push_back(fixture.writer.apply(type, config_map("fenced")));
    results.push_back(fixture.writer.patch(type, {kNamespace, "fenced"}, kube::PatchType::Merge,
                                           R"({"data":{"k":"fenced"}})"));
    results.push_back(fixture.writer.patch(type, {kNamespace, "fenced"}, kube::PatchType::Merge,
                                           R"({"status":{"x":"y"}})", "status"));
    results.push_back(fixture.writer.set_finalizers(type, *fixture.cached("fenced"), {}));
    results.push_back(fixture.writer.remove(type, {kNamespace, "fenced"}));
    for (const auto& result : results) {
      REQUIRE_FALSE(result);
      CHECK(kube::is_cancelled(result.error()));
      CHECK(result.error().message ==
            "not written: the shard slot of namespace team-a is not this replica's now (handed over, or "
            "membership lost)");
    }
    CHECK(asked.size() == asked_before + results.size());
    CHECK(fixture.requests() == sent_before);  // nothing sent
    CHECK(fixture.cached_version("fenced") == cached_before);
    CHECK(fixture.stored_version("fenced") == stored_before);
    CHECK_FALSE(fixture.server->exists(config_map_path("another")));
  };

  SECTION("the membership deadline passed (no renewal: a paused or cut-off replica)") {
    clock->advance(10s);
    every_verb_refused("deadline passed");
    // Renewed: writes go again.
    gate->extend_deadline(clock->now() + 10s);
    auto patched = fixture.writer.patch(type, {kNamespace, "fenced"}, kube::PatchType::Merge,
                                        R"({"data":{"k":"renewed"}})");
    REQUIRE(patched);
    CHECK(fixture.cached_version("fenced") == fixture.stored_version("fenced"));
  }

  SECTION("the slot handed over") {
    REQUIRE(gate->deactivate(slot));
    every_verb_refused("slot deactivated");
  }

  SECTION("membership lost: every slot closed") {
    gate->close();
    every_verb_refused("gate closed");
  }

  SECTION("another namespace's slot is not ours") {
    std::string elsewhere;
    for (int i = 0; elsewhere.empty(); ++i) {
      const std::string name = "team-" + std::to_string(i);
      if (shard_slot(name) != slot) elsewhere = name;
    }
    const std::size_t sent_before = fixture.requests();
    auto refused = fixture.writer.create(type, config_map("outside", "", elsewhere));
    REQUIRE_FALSE(refused);
    CHECK(kube::is_cancelled(refused.error()));
    CHECK(fixture.requests() == sent_before);
    CHECK(asked.back() == ObjectKey{elsewhere, "outside"});
    // Ours still goes.
    CHECK(
        fixture.writer.patch(type, {kNamespace, "fenced"}, kube::PatchType::Merge, R"({"data":{"k":"ours"}})")
            .ok());
  }
}

TEST_CASE("without caches of the kind the writer returns the answer as a cache would hold it",
          "[runtime][writer]") {
  auto server = std::make_shared<InMemoryApiServer>();
  auto client = std::make_shared<kube::Client>(server->transport("operator"), kFieldManager);
  Writer writer(client, std::make_shared<InformerRegistry>(client), kFieldManager);
  auto created = writer.create(
      kube::resources::config_maps(),
      config_map("bare", R"(,"managedFields":[{"manager":"x"}],"annotations":{)"
                         R"("kubectl.kubernetes.io/last-applied-configuration":"{}","kept":"yes"})"));
  REQUIRE(created);
  REQUIRE(created.value() != nullptr);
  const kube::ObjectView view = created.value()->view();
  CHECK(view.find({"metadata", "managedFields"}) == nullptr);
  CHECK_FALSE(view.annotation("kubectl.kubernetes.io/last-applied-configuration"));
  CHECK(view.annotation("kept") == std::optional<std::string_view>("yes"));
  CHECK(view.resource_version() == server->object(config_map_path("bare")).resource_version());
}
