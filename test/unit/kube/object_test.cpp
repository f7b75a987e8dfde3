#include "kube/object.h"

#include <catch2/catch.hpp>

#include <string>

using myop::kube::Object;

namespace {

const char* const kDeployment = R"({
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {
    "name": "web", "namespace": "shop", "uid": "0b7c-11", "resourceVersion": "4711", "generation": 3,
    "creationTimestamp": "2026-01-02T03:04:05Z",
    "labels": {"app.kubernetes.io/name": "web", "tier": "frontend"},
    "annotations": {"myorg.io/spec-hash": "abc"},
    "ownerReferences": [
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "uid": "u-1"},
      {"apiVersion": "myorg.io/v1alpha1", "kind": "MyResource", "name": "web", "uid": "u-2",
       "controller": true, "blockOwnerDeletion": true}
    ],
    "finalizers": ["myorg.io/finalizer", "other/finalizer"],
    "deletionTimestamp": "2026-01-03T00:00:00Z",
    "managedFields": [{"manager": "kubectl", "operation": "Update"}]
  },
  "spec": {"replicas": 2}
})";

Object parse(const std::string& text) {
  auto parsed = Object::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("object view reads metadata", "[kube][object]") {
  Object deployment = parse(kDeployment);
  auto view = deployment.view();
  CHECK(view.api_version() == "apps/v1");
  CHECK(view.kind() == "Deployment");
  CHECK(view.name() == "web");
  CHECK(view.namespace_name() == "shop");
  CHECK(view.uid() == "0b7c-11");
  CHECK(view.resource_version() == "4711");
  CHECK(view.generation() == 3);
  CHECK(view.creation_timestamp() == "2026-01-02T03:04:05Z");
  CHECK(view.label("tier") == std::optional<std::string_view>("frontend"));
  CHECK_FALSE(view.label("missing").has_value());
  CHECK(view.labels().size() == 2);
  CHECK(view.annotation("myorg.io/spec-hash") == std::optional<std::string_view>("abc"));
  CHECK(view.annotations().at("myorg.io/spec-hash") == "abc");

  auto owners = view.owner_references();
  REQUIRE(owners.size() == 2);
  CHECK_FALSE(owners[0].controller);
  auto controller = view.controller_owner();
  REQUIRE(controller.has_value());
  CHECK(controller->kind == "MyResource");
  CHECK(controller->uid == "u-2");
  CHECK(controller->block_owner_deletion);

  CHECK(view.finalizers().size() == 2);
  CHECK(view.has_finalizer("myorg.io/finalizer"));
  CHECK_FALSE(view.has_finalizer("myorg.io/other"));
  CHECK(view.is_being_deleted());
  CHECK(view.deletion_timestamp() == std::optional<std::string_view>("2026-01-03T00:00:00Z"));
  REQUIRE(view.find({"spec", "replicas"}) != nullptr);
  CHECK(view.find({"spec", "replicas"})->GetInt() == 2);
  CHECK(view.find({"spec", "nothing"}) == nullptr);
}

TEST_CASE("object view of an empty or odd object reads as empty", "[kube][object]") {
  Object odd = parse(R"({"metadata": {"name": 5, "labels": [], "finalizers": "x", "generation": "7"}})");
  auto view = odd.view();
  CHECK(view.name().empty());
  CHECK(view.labels().empty());
  CHECK(view.finalizers().empty());
  CHECK(view.generation() == 0);
  CHECK_FALSE(view.controller_owner().has_value());
  CHECK_FALSE(view.is_being_deleted());

  Object array = parse("[1,2]");
  CHECK(array.view().name().empty());
}

TEST_CASE("object parse reports errors as values", "[kube][object]") {
  auto broken = Object::parse(R"({"a": )");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.find("offset") != std::string::npos);

  CHECK_FALSE(Object::parse("{} trailing").ok());
  CHECK_FALSE(Object::parse("\"\xff\xfe\"").ok());  // invalid UTF-8
}

TEST_CASE("deep copy is independent of the source", "[kube][object]") {
  Object copy;
  {
    Object source = parse(kDeployment);
    copy = source.deep_copy();
    source.set_label("tier", "backend");
    CHECK(copy.view().label("tier") == std::optional<std::string_view>("frontend"));
  }
  // The source and its pool are gone; every string of the copy must still be readable.
  CHECK(copy.to_json_string() == parse(kDeployment).to_json_string());
  CHECK(copy.view().controller_owner()->name == "web");
}

TEST_CASE("copy_of never shares const strings with the source", "[kube][object]") {
  std::string name = "a-rather-long-name-that-is-not-inline";
  Object copy;
  {
    myop::kube::JsonValue source(rapidjson::kObjectType);
    rapidjson::MemoryPoolAllocator<> scratch(256);
    source.AddMember("name", rapidjson::StringRef(name.c_str()), scratch);
    copy = Object::copy_of(source);
  }
  name.assign(name.size(), 'x');
  CHECK(copy.to_json_string() == R"({"name":"a-rather-long-name-that-is-not-inline"})");
}

TEST_CASE("objects use small pools, not RapidJSON's 64 KiB default", "[kube][object]") {
  Object small = parse(R"({"metadata":{"name":"a","namespace":"b","resourceVersion":"1"}})");
  CHECK(small.allocated_bytes() <= 2048);
  Object copy = parse(kDeployment).deep_copy();
  CHECK(copy.allocated_bytes() < 4096);
  Object empty;
  CHECK(empty.allocated_bytes() < 2048);
}

TEST_CASE("metadata edits", "[kube][object]") {
  Object object;
  object.set_name("web");
  object.set_namespace_name("shop");
  object.set_resource_version("12");
  object.set_label("a", "1");
  object.set_label("a", "2");
  object.set_annotation("note", "x");
  CHECK(object.add_finalizer("myorg.io/finalizer"));
  CHECK_FALSE(object.add_finalizer("myorg.io/finalizer"));
  CHECK(object.to_json_string() ==
        R"({"metadata":{"name":"web","namespace":"shop","resourceVersion":"12","labels":{"a":"2"},)"
        R"("annotations":{"note":"x"},"finalizers":["myorg.io/finalizer"]}})");
  CHECK(object.erase_label("a"));
  CHECK_FALSE(object.erase_label("a"));
  CHECK(object.erase_annotation("note"));
  CHECK(object.remove_finalizer("myorg.io/finalizer"));
  CHECK_FALSE(object.remove_finalizer("myorg.io/finalizer"));
  CHECK(object.view().finalizers().empty());

  Object deployment = parse(kDeployment);
  CHECK(deployment.erase_managed_fields());
  CHECK(deployment.view().find({"metadata", "managedFields"}) == nullptr);
  CHECK_FALSE(deployment.erase_managed_fields());
}

TEST_CASE("moved-from objects are empty, not dangling", "[kube][object]") {
  Object first = parse(kDeployment);
  Object second = std::move(first);
  CHECK(second.name() == "web");
  CHECK(first.name().empty());  // NOLINT(bugprone-use-after-move): documented state
  CHECK(first.allocated_bytes() == 0);
}

TEST_CASE("object parse is bounded in depth and size", "[kube][object]") {
  // Refused while parsing, before a tree deep enough to exhaust the helpers' recursion exists.
  auto brackets = Object::parse(std::string(100'000, '['));
  REQUIRE_FALSE(brackets.ok());
  CHECK(brackets.error().message.find("nested deeper than 128") != std::string::npos);

  // One object at most 16 MiB unless the caller says otherwise.
  const std::string large = R"({"data":")" + std::string(myop::kube::kMaximumObjectJsonBytes, 'x') + R"("})";
  auto too_large = Object::parse(large);
  REQUIRE_FALSE(too_large.ok());
  CHECK(too_large.error().message.find("is larger than the limit of 16777216 bytes") != std::string::npos);
  auto allowed = Object::parse(large, myop::kube::JsonLimits{large.size()});
  REQUIRE(allowed.ok());
  CHECK(allowed->json()["data"].GetStringLength() == myop::kube::kMaximumObjectJsonBytes);
}
