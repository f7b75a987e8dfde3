// Which MyResource events the controller reconciles (myresource_changed): status-only writes never,
// spec changes always, also when the generation stays the same.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "fixtures.h"
#include "myresource/myresource_controller.h"

using namespace myop;
using namespace myop::myresource;

namespace {

std::shared_ptr<const kube::Object> object(const std::string& metadata, const std::string& spec,
                                           const std::string& status = "{}") {
  return std::make_shared<const kube::Object>(
      myresource::testing::parse_json(R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":)" +
                                      metadata + R"(,"spec":)" + spec + R"(,"status":)" + status + "}"));
}

bool changed(const std::shared_ptr<const kube::Object>& before,
             const std::shared_ptr<const kube::Object>& now) {
  return myresource_changed(runtime::ObjectEvent(runtime::EventType::updated, now, before));
}

const std::string kMetadata = R"({"name":"shop","namespace":"team-a","generation":1,"resourceVersion":"7"})";
const std::string kSpec = R"({"image":"reg/shop:v1","replicas":1})";

}  // namespace

TEST_CASE("myresource events: a status-only write is not reconciled, any other change is",
          "[myresource][controller]") {
  const auto before = object(kMetadata, kSpec);
  CHECK_FALSE(changed(before, object(kMetadata, kSpec, R"({"observedGeneration":1})")));
  CHECK(changed(before, object(R"({"name":"shop","namespace":"team-a","generation":2})", kSpec)));
  CHECK(changed(before,
                object(R"({"name":"shop","namespace":"team-a","generation":1,"labels":{"a":"b"}})", kSpec)));
  CHECK(changed(before,
                object(R"({"name":"shop","namespace":"team-a","generation":1,"finalizers":["f"]})", kSpec)));
  CHECK(changed(before, object(R"({"name":"shop","namespace":"team-a","generation":1,)"
                               R"("deletionTimestamp":"2026-12-04T00:00:00Z"})",
                               kSpec)));
  // Not an update: always.
  CHECK(myresource_changed(runtime::ObjectEvent(runtime::EventType::added, before)));
}

// A v1alpha1 apply that only adds myorg.io/canary and myorg.io/targetVersion changes no v1alpha1 spec
// field, so the API server keeps the generation; converted to v1beta1, the spec gained spec.canary.
TEST_CASE("myresource events: a spec change at the same generation is reconciled (v1alpha1 annotations)",
          "[myresource][controller]") {
  const auto before = object(kMetadata, kSpec);
  const auto canary = object(
      kMetadata, R"({"image":"reg/shop:v1","replicas":1,"canary":{"enabled":true,"targetVersion":"v2"}})");
  CHECK(changed(before, canary));
  CHECK(changed(canary, before));
  CHECK(changed(before,
                object(kMetadata, R"({"image":"reg/shop:v1","replicas":1,"features":{"canary":false}})")));
  CHECK(changed(object(kMetadata, "{}"), object(R"({"name":"shop","namespace":"team-a","generation":1})",
                                                R"({"image":"reg/shop:v1"})")));
}
