#include "kube/resource.h"

#include <catch2/catch.hpp>

#include "kube/client.h"
#include "kube/transport.h"

using namespace myop::kube;

TEST_CASE("paths for the core group, named groups, namespaced and cluster scope", "[kube][resource]") {
  CHECK(collection_path(resources::config_maps(), "a") == "/api/v1/namespaces/a/configmaps");
  CHECK(collection_path(resources::config_maps(), "") == "/api/v1/configmaps");
  CHECK(object_path(resources::config_maps(), "a", "b") == "/api/v1/namespaces/a/configmaps/b");
  CHECK(object_path(resources::deployments(), "ns", "web", "scale") ==
        "/apis/apps/v1/namespaces/ns/deployments/web/scale");
  CHECK(object_path(ResourceType{"myorg.io", "v1alpha1", "myresources", true, "MyResource"}, "ns", "x",
                    "status") == "/apis/myorg.io/v1alpha1/namespaces/ns/myresources/x/status");
  CHECK(object_path(resources::custom_resource_definitions(), "ignored", "myresources.myorg.io") ==
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/myresources.myorg.io");
  CHECK(collection_path(resources::namespaces(), "") == "/api/v1/namespaces");
  CHECK(group_version_path("", "v1") == "/api/v1");
  CHECK(group_version_path("apps", "v1") == "/apis/apps/v1");
  CHECK(resources::deployments().api_version() == "apps/v1");
  CHECK(resources::config_maps().api_version() == "v1");
}

TEST_CASE("names are percent-encoded as path segments", "[kube][resource]") {
  CHECK(encode_path_segment("system:node:a") == "system:node:a");
  CHECK(encode_path_segment("a b/c?d#e%") == "a%20b%2Fc%3Fd%23e%25");
  CHECK(object_path(resources::config_maps(), "n", "we/ird") == "/api/v1/namespaces/n/configmaps/we%2Fird");
}

TEST_CASE("query strings are encoded", "[kube][resource]") {
  CHECK(encode_query({{"labelSelector", "app in (a,b),tier!=x"}, {"limit", "5"}}) ==
        "labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Dx&limit=5");
  CHECK(encode_query({}).empty());
}

TEST_CASE("list and watch parameters", "[kube][resource]") {
  ListOptions list;
  list.label_selector = "a=b";
  list.field_selector = "metadata.name=x";
  list.limit = 50;
  list.continue_token = "tok";
  list.resource_version = "0";
  list.resource_version_match = "NotOlderThan";
  CHECK(encode_query(list_query(list)) ==
        "labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&limit=50&continue=tok&resourceVersion=0&"
        "resourceVersionMatch=NotOlderThan");
  CHECK(list_query(ListOptions{}).empty());

  WatchOptions watch;
  watch.resource_version = "123";
  watch.timeout_seconds = 400;
  CHECK(encode_query(watch_query(watch)) ==
        "watch=true&resourceVersion=123&allowWatchBookmarks=true&timeoutSeconds=400");
  WatchOptions watch_list;
  watch_list.send_initial_events = true;
  watch_list.resource_version_match = "NotOlderThan";
  CHECK(encode_query(watch_query(watch_list)) ==
        "watch=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&sendInitialEvents=true");
}

TEST_CASE("patch content types", "[kube][resource]") {
  CHECK(patch_content_type(PatchType::Merge) == "application/merge-patch+json");
  CHECK(patch_content_type(PatchType::Json) == "application/json-patch+json");
  CHECK(patch_content_type(PatchType::StrategicMerge) == "application/strategic-merge-patch+json");
  CHECK(patch_content_type(PatchType::Apply) == "application/apply-patch+yaml");
}
