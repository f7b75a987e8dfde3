#include "myresource/owned_fields.h"

#include <catch2/catch.hpp>

#include "fixtures.h"
#include "myresource/desired.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;

namespace {

// What the API server returns for our desired Deployment: defaults added, quantities canonical,
// empty env values dropped, status and metadata added by the server.
const char* kLive = R"({"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{"name":"web","namespace":"team-a","uid":"d-1","resourceVersion":"9","generation":1,
    "labels":{"app.kubernetes.io/name":"web","app.kubernetes.io/managed-by":"my-operator",
              "myorg.io/myresource":"web","myorg.io/track":"stable","added-by-someone":"x"},
    "annotations":{"myorg.io/spec-hash":"HASH","myorg.io/observed-generation":"4",
                   "deployment.kubernetes.io/revision":"1"},
    "ownerReferences":[{"apiVersion":"v1","kind":"Other","name":"o","uid":"other"},
      {"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","name":"web","uid":"uid-1","controller":true,
       "blockOwnerDeletion":true}]},
  "spec":{"replicas":3,"revisionHistoryLimit":10,"progressDeadlineSeconds":600,
    "selector":{"matchLabels":{"app.kubernetes.io/name":"web","myorg.io/myresource":"web","myorg.io/track":"stable"}},
    "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}},
    "template":{"metadata":{"labels":{"app.kubernetes.io/name":"web","app.kubernetes.io/managed-by":"my-operator",
                                      "myorg.io/myresource":"web","myorg.io/track":"stable"}},
      "spec":{"restartPolicy":"Always","dnsPolicy":"ClusterFirst",
        "securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},
        "containers":[{"name":"sidecar","image":"s:1"},
          {"name":"app","image":"reg:5000/team/app:1.0","imagePullPolicy":"IfNotPresent",
           "terminationMessagePath":"/dev/termination-log",
           "ports":[{"containerPort":8080,"protocol":"TCP"}],
           "env":[{"name":"EMPTY"},{"name":"LOG_LEVEL","value":"info"}],
           "resources":{"requests":{"cpu":"1","memory":"128Mi"}},
           "securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL","NET_RAW"]},
                              "runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}}}]}}},
  "status":{"replicas":3}})";

MyResource resource_for_live() {
  MyResource resource = make_resource();
  resource.spec.port = 8080;
  resource.spec.env = {{"LOG_LEVEL", "info"}, {"EMPTY", ""}};
  resource.spec.resources.requests = {{"cpu", "1000m"}, {"memory", "0.125Gi"}};
  return resource;
}

std::string live_with_hash(const myop::kube::Object& desired, std::string live) {
  std::string hash = text_at(desired, {"metadata", "annotations", "myorg.io/spec-hash"});
  live.replace(live.find("HASH"), 4, hash);
  return live;
}

}  // namespace

TEST_CASE("a live Deployment with server defaults still matches what we set", "[myresource][owned]") {
  auto desired = desired_stable_deployment(resource_for_live());
  auto live = parse_json(live_with_hash(desired, kLive));
  CHECK(first_owned_field_difference(desired.json(), live.json()) == "");
  CHECK(owned_fields_match(desired.json(), live.json()));
}

TEST_CASE("a hand edit of a field we own is a difference", "[myresource][owned]") {
  struct Case {
    std::string from;
    std::string to;
    std::string path;
  };
  auto [from, to, path] = GENERATE(values<Case>({
      {R"("replicas":3)", R"("replicas":5)", "spec.replicas"},
      {R"("image":"reg:5000/team/app:1.0")", R"("image":"evil:1")",
       "spec.template.spec.containers[app].image"},
      {R"("value":"info")", R"("value":"debug")", "spec.template.spec.containers[app].env[LOG_LEVEL].value"},
      {R"("cpu":"1")", R"("cpu":"2")", "spec.template.spec.containers[app].resources.requests.cpu"},
      {R"("allowPrivilegeEscalation":false)", R"("allowPrivilegeEscalation":true)",
       "spec.template.spec.containers[app].securityContext.allowPrivilegeEscalation"},
      {R"("drop":["ALL","NET_RAW"])", R"("drop":["NET_RAW"])",
       "spec.template.spec.containers[app].securityContext.capabilities.drop[0]"},
      {R"("containerPort":8080)", R"("containerPort":9090)",
       "spec.template.spec.containers[app].ports[8080]"},
      {R"("myorg.io/track":"stable","added-by-someone")", R"("myorg.io/track":"x","added-by-someone")",
       "metadata.labels.myorg.io/track"},
      {R"("uid":"uid-1")", R"("uid":"uid-2")", "metadata.ownerReferences[uid-1]"},
      {R"("name":"app")", R"("name":"renamed")", "spec.template.spec.containers[app]"},
  }));
  CAPTURE(from, to);
  auto desired = desired_stable_deployment(resource_for_live());
  std::string live_text = live_with_hash(desired, kLive);
  REQUIRE(live_text.find(from) != std::string::npos);
  live_text.replace(live_text.find(from), from.size(), to);
  auto live = parse_json(live_text);
  CHECK_FALSE(owned_fields_match(desired.json(), live.json()));
  CHECK(first_owned_field_difference(desired.json(), live.json()) == path);
}

TEST_CASE("a changed desired spec is a difference", "[myresource][owned]") {
  MyResource resource = resource_for_live();
  resource.spec.image = "reg:5000/team/app:2.0";
  auto desired = desired_stable_deployment(resource);
  auto live = parse_json(kLive);
  CHECK_FALSE(owned_fields_match(desired.json(), live.json()));
}

TEST_CASE("the controller ownerReference matches in any version of myorg.io, by uid", "[myresource][owned]") {
  auto desired = desired_stable_deployment(resource_for_live());
  struct Case {
    std::string from, to, difference;
  };
  auto [from, to, expected] = GENERATE(values<Case>({
      {R"("apiVersion":"myorg.io/v1alpha1")", R"("apiVersion":"myorg.io/v1alpha1")", ""},  // previous release
      {R"("apiVersion":"myorg.io/v1alpha1")", R"("apiVersion":"myorg.io/v1beta1")", ""},
      {R"("apiVersion":"myorg.io/v1alpha1")", R"("apiVersion":"myorg.io/v2")", ""},
      {R"("apiVersion":"myorg.io/v1alpha1")", R"("apiVersion":"other.io/v1beta1")",
       "metadata.ownerReferences[uid-1].apiVersion"},
      {R"("apiVersion":"myorg.io/v1alpha1")", R"("apiVersion":"v1")",
       "metadata.ownerReferences[uid-1].apiVersion"},
      {R"("kind":"MyResource","name":"web","uid":"uid-1")",
       R"("kind":"MyResource","name":"web","uid":"uid-0")", "metadata.ownerReferences[uid-1]"},
      {R"("kind":"MyResource","name":"web","uid":"uid-1")", R"("kind":"Other","name":"web","uid":"uid-1")",
       "metadata.ownerReferences[uid-1].kind"},
  }));
  std::string live = live_with_hash(desired, kLive);
  REQUIRE(live.find(from) != std::string::npos);
  live.replace(live.find(from), from.size(), to);
  CAPTURE(to);
  CHECK(first_owned_field_difference(desired.json(), parse_json(live).json()) == expected);
}
