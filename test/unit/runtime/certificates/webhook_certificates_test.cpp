// The webhook certificate manager's passes (src/runtime/certificates/webhook_certificates.h) against an
// in-memory API server that records who wrote what: one owner per CRD caBundle when two releases share the
// CRD, replicas with different names that do not renew on every pass, the move of the CA key out of the
// serving Secret, and the metrics. The real API server runs them in
// test/integration/myresource/webhook_ca_bundle_owner_test.cpp.
#include "runtime/certificates/webhook_certificates.h"

#include <catch2/catch.hpp>

#include "base/base64.h"
#include "kube/resource.h"
#include "support/in_memory_api_server.h"
#include "support/log_capture.h"
#include "support/metrics_reader.h"

using namespace myop;
using namespace myop::runtime;
using namespace std::chrono_literals;
using myop::testing::InMemoryApiServer;
using runtime::testing::metric_value;

namespace {

const std::string kCrd = "myresources.myorg.io";
const std::string kCrdPath = kube::object_path(kube::resources::custom_resource_definitions(), "", kCrd);

std::string secret_path(const std::string& namespace_name, const std::string& name) {
  return kube::object_path(kube::resources::secrets(), namespace_name, name);
}

std::string crd_naming_service(const std::string& namespace_name) {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" +
         kCrd +
         R"("},"spec":{"group":"myorg.io","conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],)"
         R"("clientConfig":{"service":{"namespace":")" +
         namespace_name + R"(","name":"my-operator-webhook","path":"/convert","port":443}}}}}})";
}

// A replica of the release in `namespace_name`, as bootstrap.cpp builds it, on `server` as `who`.
struct Replica {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::shared_ptr<WebhookCertificateManager> manager;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();

  Replica(InMemoryApiServer& server, const std::string& namespace_name, const std::string& who,
          std::vector<std::string> extra_names = {}) {
    WebhookCertificateManagerOptions options;
    options.client = std::make_shared<kube::Client>(server.transport(who), "my-operator");
    options.secret_namespace = namespace_name;
    options.secret_name = "my-operator-webhook-cert";
    options.service_name = "my-operator-webhook";
    options.crd_names = {kCrd};
    options.managed_by = "test-operator";
    options.settings.organization = "test-operator";
    options.settings.ca_name = "test-operator-webhook-ca";
    const std::string service = "my-operator-webhook." + namespace_name + ".svc";
    options.settings.names = {service, service + ".cluster.local"};
    options.settings.names.insert(options.settings.names.end(), extra_names.begin(), extra_names.end());
    options.registry = registry;
    options.metrics_prefix = "test_webhook_certificate";
    options.now = [this] { return now; };
    manager = std::make_shared<WebhookCertificateManager>(options);
  }

  void check() {
    const auto checked = manager->check();
    INFO((checked ? "" : checked.error().message));
    REQUIRE(checked.ok());
  }
  double metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    return metric_value(*registry, "test_webhook_certificate_" + name, labels).value_or(-1);
  }
};

std::string decoded_field(InMemoryApiServer& server, const std::string& path, const std::string& key) {
  const auto secret = server.object(path);
  const auto* value = secret.view().find({"data", key});
  if (value == nullptr || !value->IsString()) return {};
  return base::decode_base64(value->GetString()).value_or("");
}

std::string ca_bundle_of_crd(InMemoryApiServer& server) {
  const auto crd = server.object(kCrdPath);
  return base::decode_base64(
             kube::string_at(crd.json(), {"spec", "conversion", "webhook", "clientConfig", "caBundle"}))
      .value_or("");
}

std::size_t count_lines(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("two releases in two namespaces, the CRD naming one of them: only its owner writes the caBundle",
          "[runtime][webhook_certificates]") {
  auto server = std::make_shared<InMemoryApiServer>();
  server->put(kCrdPath, crd_naming_service("team-a"));
  myop::testing::LogCapture logs;
  Replica team_a(*server, "team-a", "team-a");
  Replica team_b(*server, "team-b", "team-b");

  for (int pass = 0; pass < 6; ++pass) {
    team_b.check();
    team_a.check();
  }
  // Each release has certificates of its own; the CRD carries team-a's CA, written once, by team-a.
  const auto bundle_a = decoded_field(*server, secret_path("team-a", "my-operator-webhook-cert"), "ca.crt");
  const auto bundle_b = decoded_field(*server, secret_path("team-b", "my-operator-webhook-cert"), "ca.crt");
  REQUIRE_FALSE(bundle_a.empty());
  REQUIRE_FALSE(bundle_b.empty());
  CHECK(bundle_a != bundle_b);
  CHECK(ca_bundle_of_crd(*server) == bundle_a);
  CHECK(server->writes("team-a", kCrdPath).size() == 1);
  CHECK(server->writes("team-b", kCrdPath).empty());
  CHECK(team_a.metric("ca_bundle_owned", {{"crd", kCrd}}) == 1);
  CHECK(team_b.metric("ca_bundle_owned", {{"crd", kCrd}}) == 0);
  // Not an error of team-b's: its passes succeed, and it said why once, not on each pass.
  CHECK(team_b.metric("checks_total", {{"result", "success"}}) == 6);
  CHECK(team_b.manager->health().ok());
  const auto text = logs.text();
  CHECK(count_lines(text, "is not this operator's") == 1);
  CHECK_THAT(text, Catch::Contains("the Service team-a/my-operator-webhook") &&
                       Catch::Contains("the Service team-b/my-operator-webhook"));

  // The CRD handed to team-b (a person edits its clientConfig): team-b takes the caBundle over, team-a
  // leaves it alone from then on.
  server->put(kCrdPath, crd_naming_service("team-b"));
  for (int pass = 0; pass < 3; ++pass) {
    team_a.check();
    team_b.check();
  }
  CHECK(ca_bundle_of_crd(*server) == bundle_b);
  CHECK(server->writes("team-a", kCrdPath).size() == 1);
  CHECK(server->writes("team-b", kCrdPath).size() == 1);
  CHECK(team_a.metric("ca_bundle_owned", {{"crd", kCrd}}) == 0);
  CHECK(team_b.metric("ca_bundle_owned", {{"crd", kCrd}}) == 1);
}

TEST_CASE("replicas with different certificate names checking in turn renew once, then write nothing",
          "[runtime][webhook_certificates]") {
  auto server = std::make_shared<InMemoryApiServer>();
  server->put(kCrdPath, crd_naming_service("ops"));
  Replica plain(*server, "ops", "plain");
  Replica with_url(*server, "ops", "with-url", {"webhook.example"});
  for (int pass = 0; pass < 10; ++pass) (pass % 2 == 0 ? plain : with_url).check();
  const auto serving_path = secret_path("ops", "my-operator-webhook-cert");
  const auto ca_path = secret_path("ops", "my-operator-webhook-cert-ca");
  // One create by the first, one renewal by the second (for its name, keeping the first's); then none.
  CHECK(server->writes("", serving_path).size() == 2);
  CHECK(server->writes("with-url", serving_path).size() == 1);
  CHECK(server->writes("", ca_path).size() == 1);
  CHECK(server->writes("", kCrdPath).size() == 1);
  auto served = inspect_certificate_pair(
      {decoded_field(*server, serving_path, "tls.crt"), decoded_field(*server, serving_path, "tls.key")});
  REQUIRE(served.ok());
  for (const std::string name : {"my-operator-webhook.ops.svc", "webhook.example"})
    CHECK(std::find(served->names.begin(), served->names.end(), name) != served->names.end());
  CHECK(plain.metric("renewals_total", {{"certificate", "serving"}}) == 1);
  CHECK(with_url.metric("renewals_total", {{"certificate", "serving"}}) == 1);
  CHECK(with_url.metric("renewals_total", {{"certificate", "ca"}}) == 0);
}

TEST_CASE("the CA key moves out of the serving Secret of the earlier layout without a new certificate",
          "[runtime][webhook_certificates]") {
  auto server = std::make_shared<InMemoryApiServer>();
  server->put(kCrdPath, crd_naming_service("ops"));
  const auto serving_path = secret_path("ops", "my-operator-webhook-cert");
  const auto ca_path = secret_path("ops", "my-operator-webhook-cert-ca");
  // What an earlier version wrote: one Secret with the CA key.
  WebhookCertificateSettings earlier;
  earlier.organization = "test-operator";
  earlier.ca_name = "test-operator-webhook-ca";
  earlier.names = {"my-operator-webhook.ops.svc", "my-operator-webhook.ops.svc.cluster.local"};
  auto legacy = renew_certificates(nullptr, {RenewalPlan::Kind::Authority, "test", {}}, earlier,
                                   std::chrono::system_clock::now());
  REQUIRE(legacy.ok());
  std::string data;
  for (const auto& [key, value] : serving_secret_data(*legacy, true))
    data += std::string(data.empty() ? "" : ",") + "\"" + key + "\":\"" + base::encode_base64(value) + "\"";
  server->put(
      serving_path,
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"my-operator-webhook-cert","namespace":"ops"},)"
      R"("type":"kubernetes.io/tls","data":{)" +
          data + "}}");

  Replica replica(*server, "ops", "new");
  replica.check();
  // The CA Secret holds the same CA; the serving Secret is untouched (its copy of the key stays for
  // operators of the earlier version); the same certificate is served.
  REQUIRE(server->exists(ca_path));
  CHECK(decoded_field(*server, ca_path, "ca.key") == legacy->ca_key);
  CHECK(decoded_field(*server, ca_path, "ca.crt") == legacy->ca_bundle);
  CHECK(server->writes("", serving_path).empty());
  CHECK(decoded_field(*server, serving_path, "tls.crt") == legacy->serving.certificate_pem);
  CHECK(replica.metric("renewals_total", {{"certificate", "serving"}}) == 0);
  CHECK(replica.metric("renewals_total", {{"certificate", "ca"}}) == 0);

  // Passes within the grace write nothing.
  replica.now += 30min;
  replica.check();
  CHECK(server->writes("", serving_path).empty());
  CHECK(server->writes("", ca_path).size() == 1);

  // After it the copy goes; certificate and bundle stay.
  replica.now += 31min;
  replica.check();
  REQUIRE(server->writes("", serving_path).size() == 1);
  CHECK(decoded_field(*server, serving_path, "ca.key").empty());
  CHECK(decoded_field(*server, serving_path, "tls.crt") == legacy->serving.certificate_pem);
  CHECK(decoded_field(*server, serving_path, "ca.crt") == legacy->ca_bundle);
  CHECK(server->writes("", ca_path).size() == 1);
  CHECK(ca_bundle_of_crd(*server) == legacy->ca_bundle);

  // An operator of the earlier version, still running, finds no key, makes a new CA and writes it with
  // its key into the serving Secret: the next pass moves that CA too, and keeps the copy again.
  auto newer = renew_certificates(&*legacy, {RenewalPlan::Kind::Authority, "test", {}}, earlier, replica.now);
  REQUIRE(newer.ok());
  std::string rewritten;
  for (const auto& [key, value] : serving_secret_data(*newer, true))
    rewritten +=
        std::string(rewritten.empty() ? "" : ",") + "\"" + key + "\":\"" + base::encode_base64(value) + "\"";
  server->put(
      serving_path,
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"my-operator-webhook-cert","namespace":"ops"},)"
      R"("type":"kubernetes.io/tls","data":{)" +
          rewritten + "}}");
  replica.check();
  CHECK(decoded_field(*server, ca_path, "ca.key") == newer->ca_key);
  CHECK(first_certificate(decoded_field(*server, ca_path, "ca.crt")) == first_certificate(newer->ca_bundle));
  CHECK(decoded_field(*server, serving_path, "ca.key") == newer->ca_key);
  CHECK(ca_bundle_of_crd(*server) == newer->ca_bundle);
}

TEST_CASE("a pass that fails is counted and leaves the last success where it was, and expiry is exported",
          "[runtime][webhook_certificates]") {
  auto server = std::make_shared<InMemoryApiServer>();
  server->put(kCrdPath, crd_naming_service("ops"));
  Replica replica(*server, "ops", "ops");
  CHECK(replica.metric("last_success_timestamp_seconds") == 0);
  CHECK(replica.metric("expiry_timestamp_seconds", {{"certificate", "serving"}}) == -1);  // absent
  replica.check();
  const double succeeded_at = replica.metric("last_success_timestamp_seconds");
  CHECK(succeeded_at == Approx(std::chrono::duration<double>(replica.now.time_since_epoch()).count()));
  const auto serving_path = secret_path("ops", "my-operator-webhook-cert");
  auto served = inspect_certificate_pair(
      {decoded_field(*server, serving_path, "tls.crt"), decoded_field(*server, serving_path, "tls.key")});
  REQUIRE(served.ok());
  CHECK(replica.metric("expiry_timestamp_seconds", {{"certificate", "serving"}}) ==
        Approx(std::chrono::duration<double>(served->valid_until.time_since_epoch()).count()));
  CHECK(replica.metric("expiry_timestamp_seconds", {{"certificate", "ca"}}) >
        replica.metric("expiry_timestamp_seconds", {{"certificate", "serving"}}));

  server->fail(kCrdPath, 500);
  replica.now += 1min;
  const auto checked = replica.manager->check();
  REQUIRE_FALSE(checked.ok());
  CHECK_THAT(checked.error().message, Catch::Contains("cannot read the CRD " + kCrd));
  CHECK(checked.error().reason == myop::kube::Reason::InternalError);  // the API error is kept
  CHECK_THAT(replica.manager->health().error(), Catch::Contains("cannot read the CRD " + kCrd));
  CHECK(replica.metric("checks_total", {{"result", "failure"}}) == 1);
  CHECK(replica.metric("checks_total", {{"result", "success"}}) == 1);
  CHECK(replica.metric("last_success_timestamp_seconds") == succeeded_at);

  server->fail(serving_path, 403);
  CHECK_FALSE(replica.manager->check().ok());
  CHECK(replica.metric("checks_total", {{"result", "failure"}}) == 2);
  server->clear_failures();
  replica.check();
  CHECK(replica.metric("last_success_timestamp_seconds") > succeeded_at);
}
