#include "myresource/orphans.h"

#include <catch2/catch.hpp>

#include <map>

#include "fixtures.h"

using namespace myop;
using namespace myop::myresource;
using myop::myresource::testing::parse_json;

namespace {

std::shared_ptr<const kube::Object> deployment(const std::string& name, const std::string& owner_json,
                                               const std::string& managed_by = "my-operator",
                                               const std::string& extra_metadata = "") {
  return std::make_shared<const kube::Object>(parse_json(
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
      R"(","namespace":"team","uid":"uid-)" + name + R"(","labels":{"app.kubernetes.io/managed-by":")" +
      managed_by + R"(","myorg.io/myresource":"web"})" +
      (owner_json.empty() ? "" : R"(,"ownerReferences":[)" + owner_json + "]") + extra_metadata + "}}"));
}

std::string owner(const std::string& name, const std::string& uid, const std::string& kind = "MyResource") {
  return R"({"apiVersion":"myorg.io/v1alpha1","kind":")" + kind + R"(","name":")" + name + R"(","uid":")" +
         uid + R"(","controller":true,"blockOwnerDeletion":true})";
}

struct FakeMyResources {
  std::map<std::string, std::shared_ptr<const kube::Object>> by_name;
  void add(const std::string& name, const std::string& uid) {
    by_name[name] = std::make_shared<const kube::Object>(
        parse_json(R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":")" + name +
                   R"(","namespace":"team","uid":")" + uid + R"("}})"));
  }
  MyResourceLookup lookup() const {
    return [this](const runtime::ObjectKey& key) -> std::shared_ptr<const kube::Object> {
      if (key.namespace_name != "team") return nullptr;
      auto found = by_name.find(key.name);
      return found == by_name.end() ? nullptr : found->second;
    };
  }
};

}  // namespace

TEST_CASE("find_orphans: a Deployment whose owner MyResource exists is not an orphan", "[orphans]") {
  FakeMyResources myresources;
  myresources.add("web", "uid-1");
  CHECK(find_orphans({deployment("web", owner("web", "uid-1"))}, myresources.lookup()).empty());
}

TEST_CASE("find_orphans: a Deployment whose owner is gone is an orphan, with the reason", "[orphans]") {
  FakeMyResources myresources;
  auto orphans = find_orphans({deployment("web", owner("web", "uid-1"))}, myresources.lookup());
  REQUIRE(orphans.size() == 1);
  CHECK(orphans[0].namespace_name == "team");
  CHECK(orphans[0].name == "web");
  CHECK(orphans[0].uid == "uid-web");
  CHECK_THAT(orphans[0].reason, Catch::Contains("no longer exists"));
}

TEST_CASE("find_orphans: an owner replaced by a same-named MyResource leaves an orphan", "[orphans]") {
  FakeMyResources myresources;
  myresources.add("web", "uid-2");
  auto orphans = find_orphans({deployment("web", owner("web", "uid-1"))}, myresources.lookup());
  REQUIRE(orphans.size() == 1);
  CHECK_THAT(orphans[0].reason, Catch::Contains("replaced"));
}

TEST_CASE("find_orphans: what is not ours, or is unowned, or is going, is left alone", "[orphans]") {
  FakeMyResources myresources;
  SECTION("another manager's Deployment") {
    CHECK(find_orphans({deployment("web", owner("web", "uid-1"), "helm")}, myresources.lookup()).empty());
  }
  SECTION("owned by another kind") {
    CHECK(
        find_orphans({deployment("web", owner("web", "uid-1", "ReplicaSet"))}, myresources.lookup()).empty());
  }
  SECTION("no owner: adoption, not the sweep, handles it") {
    CHECK(find_orphans({deployment("web", "")}, myresources.lookup()).empty());
  }
  SECTION("already being deleted") {
    CHECK(find_orphans({deployment("web", owner("web", "uid-1"), "my-operator",
                                   R"(,"deletionTimestamp":"2026-01-01T00:00:00Z")")},
                       myresources.lookup())
              .empty());
  }
}
