// One owner per CRD caBundle (src/runtime/certificates/ca_bundle_owner.h): an operator keeps the caBundle of
// a CRD only when the CRD's conversion clientConfig names its own Service or a URL host its certificate
// names; two releases in two namespaces each see the other's CRD as not theirs.
#include "runtime/certificates/ca_bundle_owner.h"

#include <catch2/catch.hpp>

using namespace myop;
using namespace myop::runtime;
using Kind = CaBundleOwnership::Kind;

namespace {

kube::Object crd(const std::string& conversion) {
  auto parsed = kube::Object::parse(
      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)"
      R"("metadata":{"name":"myresources.myorg.io"},"spec":{"group":"myorg.io","conversion":)" +
      conversion + "}}");
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

kube::Object service_crd(const std::string& namespace_name, const std::string& name) {
  return crd(R"({"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":)"
             R"({"service":{"namespace":")" +
             namespace_name + R"(","name":")" + name + R"(","path":"/convert","port":443}}}})");
}

kube::Object url_crd(const std::string& url) {
  return crd(R"({"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":")" +
             url + R"("}}})");
}

WebhookIdentity release(const std::string& namespace_name, std::vector<std::string> extra_hosts = {}) {
  WebhookIdentity identity{namespace_name,
                           "my-operator-webhook",
                           {"my-operator-webhook." + namespace_name + ".svc",
                            "my-operator-webhook." + namespace_name + ".svc.cluster.local"}};
  identity.hosts.insert(identity.hosts.end(), extra_hosts.begin(), extra_hosts.end());
  return identity;
}

}  // namespace

TEST_CASE("a CRD whose clientConfig names this operator's Service is its own, another release's is not",
          "[runtime][webhook_certificates][ca_bundle_owner]") {
  const auto team_a = release("team-a");
  const auto team_b = release("team-b");
  const auto names_a = service_crd("team-a", "my-operator-webhook");

  const auto a = decide_ca_bundle_owner(names_a.json(), team_a);
  CHECK(a.owned());
  CHECK(a.target == "the Service team-a/my-operator-webhook");

  const auto b = decide_ca_bundle_owner(names_a.json(), team_b);
  CHECK_FALSE(b.owned());
  CHECK(b.kind == Kind::AnotherWebhook);
  CHECK(b.target == "the Service team-a/my-operator-webhook");

  // Same namespace, another Service name (a second release in one namespace): not its own either.
  CHECK_FALSE(decide_ca_bundle_owner(service_crd("team-a", "other-webhook").json(), team_a).owned());
  // Same name, another namespace.
  CHECK_FALSE(decide_ca_bundle_owner(service_crd("team-b", "my-operator-webhook").json(), team_a).owned());
}

TEST_CASE("a CRD whose clientConfig is a URL belongs to the operator whose certificate names its host",
          "[runtime][webhook_certificates][ca_bundle_owner]") {
  const auto loopback = release("ops", {"127.0.0.1"});
  const auto other = release("ops-2", {"localhost"});
  const auto crd_at_loopback = url_crd("https://127.0.0.1:9443/convert");
  CHECK(decide_ca_bundle_owner(crd_at_loopback.json(), loopback).owned());
  const auto not_mine = decide_ca_bundle_owner(crd_at_loopback.json(), other);
  CHECK_FALSE(not_mine.owned());
  CHECK(not_mine.kind == Kind::AnotherWebhook);
  CHECK(not_mine.target == "the URL https://127.0.0.1:9443/convert");

  // The Service's DNS name in a URL is the Service's operator's.
  CHECK(decide_ca_bundle_owner(url_crd("https://my-operator-webhook.ops.svc:443/convert").json(), loopback)
            .owned());
  CHECK_FALSE(
      decide_ca_bundle_owner(url_crd("https://my-operator-webhook.ops.svc/convert").json(), other).owned());
  // Host names compare without case; a host that merely starts like one of ours is not ours.
  CHECK(decide_ca_bundle_owner(url_crd("https://MY-OPERATOR-WEBHOOK.OPS.SVC/convert").json(), loopback)
            .owned());
  CHECK_FALSE(decide_ca_bundle_owner(url_crd("https://127.0.0.10:9443/convert").json(), loopback).owned());
  CHECK(
      decide_ca_bundle_owner(url_crd("https://[::1]:9443/convert").json(), release("ops", {"::1"})).owned());
}

TEST_CASE("a CRD without webhook conversion, or whose webhook names nothing, is left alone",
          "[runtime][webhook_certificates][ca_bundle_owner]") {
  const auto self = release("ops", {"127.0.0.1"});
  const auto none = decide_ca_bundle_owner(crd(R"({"strategy":"None"})").json(), self);
  CHECK(none.kind == Kind::NotWebhook);
  CHECK_FALSE(none.owned());
  auto bare = kube::Object::parse(R"({"metadata":{"name":"x.y"},"spec":{}})");
  REQUIRE(bare.ok());
  CHECK(decide_ca_bundle_owner(bare->json(), self).kind == Kind::NotWebhook);
  const auto empty =
      decide_ca_bundle_owner(crd(R"({"strategy":"Webhook","webhook":{"clientConfig":{}}})").json(), self);
  CHECK(empty.kind == Kind::AnotherWebhook);
  CHECK(empty.target == "no webhook");
}

TEST_CASE("the host of a webhook URL", "[runtime][webhook_certificates][ca_bundle_owner]") {
  CHECK(url_host("https://a.example/convert") == "a.example");
  CHECK(url_host("https://a.example:9443/convert?x=1") == "a.example");
  CHECK(url_host("https://A.Example") == "a.example");
  CHECK(url_host("https://[::1]:9443/convert") == "::1");
  CHECK(url_host("https://user@a.example/x") == "a.example");
  CHECK(url_host("a.example/convert").empty());
  CHECK(url_host("").empty());
}

TEST_CASE("what this operator is reached by, for the log",
          "[runtime][webhook_certificates][ca_bundle_owner]") {
  CHECK(describe(WebhookIdentity{"ops", "hook", {}}) == "the Service ops/hook");
  CHECK(describe(WebhookIdentity{"ops", "hook", {"hook.ops.svc", "127.0.0.1"}}) ==
        "the Service ops/hook, or a URL whose host is one of: hook.ops.svc, 127.0.0.1");
}
