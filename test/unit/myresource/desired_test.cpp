#include "myresource/desired.h"

#include <catch2/catch.hpp>

#include "fixtures.h"
#include "kube/canonical_json.h"
#include "myresource/spec_hash.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;
using myop::kube::JsonValue;
using myop::kube::Object;

namespace {

const JsonValue& container_of(const Object& deployment) {
  const JsonValue* containers = deployment.view().find({"spec", "template", "spec", "containers"});
  REQUIRE(containers != nullptr);
  REQUIRE(containers->Size() == 1);
  return (*containers)[0];
}

std::string canonical(const JsonValue& value) { return myop::kube::canonical_json(value); }

}  // namespace

TEST_CASE("the stable Deployment carries names, labels, owner and annotations", "[myresource][desired]") {
  MyResource resource = make_resource();
  Object deployment = desired_stable_deployment(resource);
  auto view = deployment.view();
  CHECK(view.api_version() == "apps/v1");
  CHECK(view.kind() == "Deployment");
  CHECK(view.name() == "web");
  CHECK(view.namespace_name() == "team-a");
  CHECK(view.labels() ==
        std::map<std::string, std::string, std::less<>>{{"app.kubernetes.io/name", "web"},
                                                        {"app.kubernetes.io/managed-by", "my-operator"},
                                                        {"myorg.io/myresource", "web"},
                                                        {"myorg.io/track", "stable"}});
  CHECK_FALSE(view.label("app.kubernetes.io/instance"));  // Argo CD's tracking label is never copied
  CHECK_FALSE(view.label("team"));
  auto owner = view.controller_owner();
  REQUIRE(owner);
  CHECK(owner->api_version == "myorg.io/v1beta1");
  CHECK(owner->kind == "MyResource");
  CHECK(owner->name == "web");
  CHECK(owner->uid == "uid-1");
  CHECK(owner->block_owner_deletion);
  CHECK(view.owner_references().size() == 1);
  CHECK(view.annotation(kObservedGenerationAnnotation) == "4");
  CHECK(view.annotation(kSpecHashAnnotation) == spec_hash(*view.find({"spec"})));
  // Nothing the server owns: no status, no resourceVersion, no managedFields.
  CHECK(view.find({"status"}) == nullptr);
  CHECK(view.resource_version().empty());
}

TEST_CASE("the stable Deployment spec: replicas, selector, hardened pod", "[myresource][desired]") {
  MyResource resource = make_resource();
  resource.spec.port = 8080;
  resource.spec.env = {{"LOG_LEVEL", "info"}, {"EMPTY", ""}};
  resource.spec.resources.requests = {{"cpu", "100m"}};
  resource.spec.resources.limits = {{"memory", "128Mi"}};
  Object deployment = desired_stable_deployment(resource);
  auto view = deployment.view();
  CHECK(view.find({"spec", "replicas"})->GetInt() == 3);
  CHECK(
      canonical(*view.find({"spec", "selector"})) ==
      R"({"matchLabels":{"app.kubernetes.io/name":"web","myorg.io/myresource":"web","myorg.io/track":"stable"}})");
  CHECK(canonical(*view.find({"spec", "template", "metadata", "labels"})) ==
        R"({"app.kubernetes.io/managed-by":"my-operator","app.kubernetes.io/name":"web",)"
        R"("myorg.io/myresource":"web","myorg.io/track":"stable"})");
  CHECK(canonical(*view.find({"spec", "template", "spec", "securityContext"})) ==
        R"({"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}})");
  const JsonValue& container = container_of(deployment);
  CHECK(canonical(container) ==
        R"({"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"EMPTY","value":""}],)"
        R"("image":"reg:5000/team/app:1.0","name":"app","ports":[{"containerPort":8080,"protocol":"TCP"}],)"
        R"("resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"100m"}},)"
        R"("securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},)"
        R"("runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}}})");
}

TEST_CASE("optional fields are left out, not written empty", "[myresource][desired]") {
  Object deployment = desired_stable_deployment(make_resource());
  const JsonValue& container = container_of(deployment);
  CHECK_FALSE(container.HasMember("ports"));
  CHECK_FALSE(container.HasMember("env"));
  CHECK_FALSE(container.HasMember("resources"));
  CHECK(deployment.view().find({"spec", "progressDeadlineSeconds"}) == nullptr);
}

TEST_CASE("spec.progressDeadlineSeconds becomes the stable Deployment's deadline", "[myresource][desired]") {
  MyResource resource = make_resource();
  resource.spec.progress_deadline_seconds = 30;
  Object deployment = desired_stable_deployment(resource);
  CHECK(deployment.view().find({"spec", "progressDeadlineSeconds"})->GetInt() == 30);
}

TEST_CASE("the spec hash follows the spec and only the spec", "[myresource][desired]") {
  MyResource resource = make_resource();
  std::string base =
      text_at(desired_stable_deployment(resource), {"metadata", "annotations", "myorg.io/spec-hash"});

  MyResource other_generation = resource;
  other_generation.metadata.generation = 9;
  other_generation.metadata.labels["new"] = "label";
  other_generation.spec.canary.replicas = 5;  // a canary setting does not touch the stable Deployment
  CHECK(text_at(desired_stable_deployment(other_generation),
                {"metadata", "annotations", "myorg.io/spec-hash"}) == base);

  auto change = GENERATE(as<std::string>{}, "image", "replicas", "port", "env", "resources");
  CAPTURE(change);
  MyResource changed = resource;
  if (change == "image") changed.spec.image = "reg:5000/team/app:1.1";
  if (change == "replicas") changed.spec.replicas = 4;
  if (change == "port") changed.spec.port = 80;
  if (change == "env") changed.spec.env = {{"A", "1"}};
  if (change == "resources") changed.spec.resources.limits = {{"cpu", "1"}};
  CHECK(text_at(desired_stable_deployment(changed), {"metadata", "annotations", "myorg.io/spec-hash"}) !=
        base);
}

// Objects written before spec.automountServiceAccountToken existed must keep their spec hash and
// their pod template when the operator is upgraded, or every workload would roll.
TEST_CASE("spec.automountServiceAccountToken unset changes nothing, and set it is the pod's field",
          "[myresource][desired]") {
  const MyResource resource = make_resource();
  const Object deployment = desired_stable_deployment(resource);
  // The spec the operator wrote before the field existed, member for member, and its hash.
  CHECK(
      canonical(*deployment.view().find({"spec"})) ==
      R"({"replicas":3,"selector":{"matchLabels":{"app.kubernetes.io/name":"web","myorg.io/myresource":"web",)"
      R"("myorg.io/track":"stable"}},"template":{"metadata":{"labels":{"app.kubernetes.io/managed-by":)"
      R"("my-operator","app.kubernetes.io/name":"web","myorg.io/myresource":"web","myorg.io/track":"stable"}},)"
      R"("spec":{"containers":[{"image":"reg:5000/team/app:1.0","name":"app","securityContext":)"
      R"({"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"runAsNonRoot":true,)"
      R"("seccompProfile":{"type":"RuntimeDefault"}}}],"securityContext":{"runAsNonRoot":true,)"
      R"("seccompProfile":{"type":"RuntimeDefault"}}}}})");
  CHECK(text_at(deployment, {"metadata", "annotations", "myorg.io/spec-hash"}) == "471a6fc98d32ac21");

  for (const bool mount : {false, true}) {
    CAPTURE(mount);
    MyResource set = resource;
    set.spec.automount_service_account_token = mount;
    const Object with_field = desired_stable_deployment(set);
    const JsonValue* field =
        with_field.view().find({"spec", "template", "spec", "automountServiceAccountToken"});
    REQUIRE(field != nullptr);
    REQUIRE(field->IsBool());
    CHECK(field->GetBool() == mount);
    CHECK(text_at(with_field, {"metadata", "annotations", "myorg.io/spec-hash"}) != "471a6fc98d32ac21");
  }
}

TEST_CASE("the canary Deployment is a separate track with its own selector", "[myresource][desired]") {
  MyResource resource = make_resource();
  resource.spec.canary.progress_deadline_seconds = 120;
  Object canary = desired_canary_deployment(resource, {"reg:5000/team/app:1.1", 1, "2026-01-01T00:00:00Z"});
  auto view = canary.view();
  CHECK(view.name() == "web-canary");
  CHECK(view.label("myorg.io/track") == "canary");
  CHECK(view.label("myorg.io/myresource") == "web");
  CHECK(view.find({"spec", "replicas"})->GetInt() == 1);
  CHECK(view.find({"spec", "progressDeadlineSeconds"})->GetInt() == 120);
  CHECK(text_at(canary, {"spec", "selector", "matchLabels", "myorg.io/track"}) == "canary");
  CHECK(text_at(canary, {"spec", "template", "metadata", "labels", "myorg.io/track"}) == "canary");
  CHECK(text_at(canary, {"metadata", "annotations", "myorg.io/canary-started-at"}) == "2026-01-01T00:00:00Z");
  CHECK(std::string(container_of(canary)["image"].GetString()) == "reg:5000/team/app:1.1");
  CHECK(view.controller_owner()->name == "web");

  Object stable = desired_stable_deployment(resource);
  CHECK(canonical(*stable.view().find({"spec", "selector"})) != canonical(*view.find({"spec", "selector"})));
}

TEST_CASE("deployment names and label helpers", "[myresource][desired]") {
  CHECK(deployment_name("web", Track::Stable) == "web");
  CHECK(deployment_name("web", Track::Canary) == "web-canary");
  CHECK(child_selector("web", Track::Canary).count(std::string(kManagedByLabel)) == 0);
  CHECK(child_labels("web", Track::Canary).at(std::string(kManagedByLabel)) == "my-operator");
}
