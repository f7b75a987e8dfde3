#include "runtime/storage_migration.h"

#include <catch2/catch.hpp>

using namespace myop;
using namespace myop::runtime;

namespace {

rapidjson::Document json(const std::string& text) {
  rapidjson::Document document;
  document.Parse(text.c_str(), text.size());
  REQUIRE_FALSE(document.HasParseError());
  return document;
}

const char* const kCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "myresources.myorg.io", "resourceVersion": "812"},
  "spec": {"group": "myorg.io", "scope": "Namespaced",
           "names": {"plural": "myresources", "kind": "MyResource"},
           "versions": [{"name": "v1alpha1", "served": true, "storage": false},
                        {"name": "v1beta1", "served": true, "storage": true}]},
  "status": {"storedVersions": ["v1alpha1", "v1beta1"]}})";

}  // namespace

TEST_CASE("storage migration reads the storage version and storedVersions of a CRD", "[storage-migration]") {
  auto crd = read_crd_storage(json(kCrd));
  REQUIRE(crd);
  CHECK(crd->name == "myresources.myorg.io");
  CHECK(crd->resource_version == "812");
  CHECK(crd->storage_version() == "v1beta1");
  CHECK(crd->stored_versions == std::vector<std::string>{"v1alpha1", "v1beta1"});
  // The objects are listed and written in the storage version.
  CHECK(crd->type.api_version() == "myorg.io/v1beta1");
  CHECK(crd->type.resource == "myresources");
  CHECK(crd->type.namespaced);
  CHECK(needs_migration(*crd));

  SECTION("only the storage version stored: nothing to do") {
    crd->stored_versions = {"v1beta1"};
    CHECK_FALSE(needs_migration(*crd));
  }
  SECTION("a rollback: the old version stores again, the new one is left in storedVersions") {
    crd->type.version = "v1alpha1";
    CHECK(needs_migration(*crd));
  }
  SECTION("a cluster-scoped CRD") {
    auto cluster = read_crd_storage(
        json(std::string(kCrd).replace(std::string(kCrd).find("Namespaced"), 10, "Cluster")));
    REQUIRE(cluster);
    CHECK_FALSE(cluster->type.namespaced);
  }
}

TEST_CASE("storage migration refuses a CRD without a storage version, naming it", "[storage-migration]") {
  std::string text = kCrd;
  text.replace(text.find(R"("storage": true)"), 15, R"("storage": false)");
  const auto crd = read_crd_storage(json(text));
  REQUIRE_FALSE(crd);
  CHECK_THAT(crd.error().message,
             Catch::Contains("myresources.myorg.io") && Catch::Contains("storage: true"));
  const auto bare = read_crd_storage(json(R"({"metadata": {"name": "x.y"}, "spec": {}})"));
  REQUIRE_FALSE(bare);
  CHECK_THAT(bare.error().message, Catch::Contains("x.y") && Catch::Contains("spec.group"));
}

TEST_CASE("storage migration writes nothing but the resourceVersion precondition", "[storage-migration]") {
  const auto patch = json(no_op_patch("4711"));
  CHECK(patch.MemberCount() == 1);
  CHECK(patch["metadata"].MemberCount() == 1);
  CHECK(std::string(patch["metadata"]["resourceVersion"].GetString()) == "4711");
  // The resourceVersion is opaque text, quoted whatever it holds.
  CHECK(std::string(json(no_op_patch(R"(a"b)"))["metadata"]["resourceVersion"].GetString()) == R"(a"b)");
}

TEST_CASE("storage migration trims storedVersions to the storage version under the CRD's resourceVersion",
          "[storage-migration]") {
  auto crd = read_crd_storage(json(kCrd));
  REQUIRE(crd);
  const auto patch = json(trim_stored_versions_patch(*crd));
  CHECK(std::string(patch["metadata"]["resourceVersion"].GetString()) == "812");
  const auto& stored = patch["status"]["storedVersions"];
  REQUIRE(stored.IsArray());
  REQUIRE(stored.Size() == 1);
  CHECK(std::string(stored[0].GetString()) == "v1beta1");
}
