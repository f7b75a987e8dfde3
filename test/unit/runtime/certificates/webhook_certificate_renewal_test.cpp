// The webhook's self-managed certificates (src/runtime/certificates/webhook_certificate_renewal.h): when the
// serving certificate and the CA are renewed, what a renewal names, and what it keeps trusted.
#include "runtime/certificates/webhook_certificate_renewal.h"

#include <algorithm>

#include <catch2/catch.hpp>

using namespace myop::runtime;
using namespace std::chrono_literals;
using Kind = RenewalPlan::Kind;

namespace {

WebhookCertificateSettings settings(std::chrono::seconds ca_validity = 24h * 3650,
                                    std::chrono::seconds serving_validity = 24h * 365) {
  WebhookCertificateSettings result;
  result.names = {"my-operator-webhook.ops.svc", "127.0.0.1"};
  result.organization = "test-operator";
  result.ca_name = "test-operator-webhook-ca";
  result.ca_validity = ca_validity;
  result.serving_validity = serving_validity;
  return result;
}

WebhookCertificates made(const WebhookCertificateSettings& with) {
  auto certificates =
      renew_certificates(nullptr, {Kind::Authority, "test", {}}, with, std::chrono::system_clock::now());
  INFO((certificates.ok() ? std::string() : certificates.error().to_string()));
  REQUIRE(certificates.ok());
  return *certificates;
}

std::size_t certificate_count(const std::string& bundle) {
  auto described = describe_certificates(bundle);
  return described ? described->size() : 0;
}

std::vector<std::string> names_of(const WebhookCertificates& certificates) {
  auto described = inspect_certificate_pair(certificates.serving);
  REQUIRE(described.ok());
  auto names = described->names;
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("no Secret yet, or one that is not usable, makes a CA and a serving certificate",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  CHECK(plan_renewal(nullptr, settings(), now).kind == Kind::Authority);

  const auto good = made(settings());
  CHECK(plan_renewal(&good, settings(), now).kind == Kind::Keep);
  CHECK(plan_renewal(&good, settings(), now).reason.empty());
  CHECK(certificate_count(good.ca_bundle) == 1);
  CHECK(issued_by(good.serving.certificate_pem, good.ca_bundle));

  auto empty = good;
  empty.ca_bundle.clear();
  CHECK(plan_renewal(&empty, settings(), now).kind == Kind::Authority);
  auto other_key = good;
  other_key.ca_key = made(settings()).ca_key;
  const auto plan = plan_renewal(&other_key, settings(), now);
  CHECK(plan.kind == Kind::Authority);
  CHECK_THAT(plan.reason, Catch::Contains("the CA is not usable"));
}

TEST_CASE("the serving certificate is renewed when a third of it is left, for new names, or for another CA",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto with = settings(24h * 3650, 90s);
  const auto current = made(with);
  CHECK(plan_renewal(&current, with, now).kind == Kind::Keep);
  CHECK(plan_renewal(&current, with, now + 55s).kind == Kind::Keep);
  const auto due = plan_renewal(&current, with, now + 65s);  // 25 s of 90 left
  CHECK(due.kind == Kind::Serving);
  CHECK_THAT(due.reason, Catch::Contains("within a third of its validity"));

  auto renamed = with;
  renamed.names.push_back("my-operator-webhook.ops.svc.cluster.local");
  const auto rename = plan_renewal(&current, renamed, now);
  CHECK(rename.kind == Kind::Serving);
  CHECK_THAT(rename.reason, Catch::Contains("does not name my-operator-webhook.ops.svc.cluster.local"));

  auto foreign = current;
  foreign.serving = made(with).serving;  // signed by another CA
  CHECK(plan_renewal(&foreign, with, now).kind == Kind::Serving);

  auto broken = current;
  broken.serving.key_pem = "garbage";
  CHECK(plan_renewal(&broken, with, now).kind == Kind::Serving);

  // The renewal keeps the CA and its bundle, and signs a new certificate with it.
  auto renewed = renew_certificates(&current, due, with, now + 65s);
  REQUIRE(renewed.ok());
  CHECK(renewed->ca_bundle == current.ca_bundle);
  CHECK(renewed->ca_key == current.ca_key);
  CHECK(renewed->serving.certificate_pem != current.serving.certificate_pem);
  CHECK(issued_by(renewed->serving.certificate_pem, current.ca_bundle));
  CHECK(plan_renewal(&*renewed, with, std::chrono::system_clock::now()).kind == Kind::Keep);
}

TEST_CASE("a CA renewed keeps the earlier CAs trusted until they expire", "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto with = settings(120s, 30s);
  const auto first = made(with);
  CHECK(plan_renewal(&first, with, now + 70s).kind != Kind::Authority);  // the serving one is due by then
  const auto due = plan_renewal(&first, with, now + 85s);                // 35 s of 120 left
  CHECK(due.kind == Kind::Authority);
  CHECK_THAT(due.reason, Catch::Contains("the CA expires"));

  auto second = renew_certificates(&first, due, with, now + 85s);
  REQUIRE(second.ok());
  // The new CA first, the old one after it: both trusted, the new one signs.
  REQUIRE(certificate_count(second->ca_bundle) == 2);
  CHECK(first_certificate(second->ca_bundle) != first_certificate(first.ca_bundle));
  CHECK(second->ca_bundle.find(first_certificate(first.ca_bundle)) != std::string::npos);
  CHECK(issued_by(second->serving.certificate_pem, first_certificate(second->ca_bundle)));
  CHECK_FALSE(issued_by(second->serving.certificate_pem, first.ca_bundle));

  // Renewed again after the first CA has expired (the second, made with a longer validity, has not):
  // the first leaves the bundle.
  auto longer = with;
  longer.ca_validity = 600s;
  second = renew_certificates(&first, due, longer, now + 85s);
  REQUIRE(second.ok());
  auto third = renew_certificates(&*second, {Kind::Authority, "test", {}}, with, now + 200s);
  REQUIRE(third.ok());
  CHECK(certificate_count(third->ca_bundle) == 2);  // the third and the second
  CHECK(third->ca_bundle.find(first_certificate(first.ca_bundle)) == std::string::npos);
  CHECK(third->ca_bundle.find(first_certificate(second->ca_bundle)) != std::string::npos);
}

TEST_CASE("the first certificate of a bundle", "[runtime][webhook_certificates]") {
  const auto a = made(settings());
  const auto b = made(settings());
  const std::string bundle = first_certificate(a.ca_bundle) + first_certificate(b.ca_bundle);
  CHECK(first_certificate(bundle) == first_certificate(a.ca_bundle));
  CHECK(first_certificate(bundle).back() == '\n');
  CHECK(first_certificate("").empty());
  CHECK(first_certificate("no pem here").empty());
}

TEST_CASE("a new CA keeps the old CA's serving certificate until a later renewal replaces it",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto with = settings(300s, 300s);
  // A CA near its end (30 s of 300 left) and a fresh serving certificate it signed.
  auto old_ca = issue_certificate({{"old-ca"}, "", true, 30s});
  REQUIRE(old_ca.ok());
  auto serving = issue_certificate({with.names, "", false, 300s}, &*old_ca);
  REQUIRE(serving.ok());
  const WebhookCertificates current{old_ca->certificate_pem, old_ca->key_pem, *serving};
  const auto plan = plan_renewal(&current, with, now);
  REQUIRE(plan.kind == Kind::Authority);

  auto renewed = renew_certificates(&current, plan, with, now);
  REQUIRE(renewed.ok());
  CHECK(certificate_count(renewed->ca_bundle) == 2);
  // Still the old CA's certificate: the new CA is not yet in the CRDs' caBundle.
  CHECK(renewed->serving.certificate_pem == serving->certificate_pem);
  // Then the next plan replaces it with one of the new CA.
  const auto next = plan_renewal(&*renewed, with, now);
  CHECK(next.kind == Kind::Serving);
  CHECK_THAT(next.reason, Catch::Contains("not the current CA's"));
  auto switched = renew_certificates(&*renewed, next, with, now);
  REQUIRE(switched.ok());
  CHECK(issued_by(switched->serving.certificate_pem, first_certificate(renewed->ca_bundle)));
  CHECK(plan_renewal(&*switched, with, now).kind == Kind::Keep);

  // A serving certificate due anyway is not kept for the new CA.
  auto short_serving = issue_certificate({with.names, "", false, 30s}, &*old_ca);
  REQUIRE(short_serving.ok());
  const WebhookCertificates due{old_ca->certificate_pem, old_ca->key_pem, *short_serving};
  auto replaced = renew_certificates(&due, plan_renewal(&due, with, now), with, now);
  REQUIRE(replaced.ok());
  CHECK(replaced->serving.certificate_pem != short_serving->certificate_pem);
  CHECK(issued_by(replaced->serving.certificate_pem, first_certificate(replaced->ca_bundle)));
}

TEST_CASE("a certificate lacking a name is renewed with the names it had and the ones wanted",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto current = made(settings());  // my-operator-webhook.ops.svc, 127.0.0.1
  auto more = settings();
  more.names = {"my-operator-webhook.ops.svc", "localhost"};
  const auto plan = plan_renewal(&current, more, now);
  REQUIRE(plan.kind == Kind::Serving);
  CHECK_THAT(plan.reason, Catch::Contains("does not name localhost"));
  CHECK(plan.names == std::vector<std::string>{"my-operator-webhook.ops.svc", "localhost", "127.0.0.1"});
  auto renewed = renew_certificates(&current, plan, more, now);
  REQUIRE(renewed.ok());
  CHECK(names_of(*renewed) ==
        std::vector<std::string>{"127.0.0.1", "localhost", "my-operator-webhook.ops.svc"});
  // Both sets of names are in it: neither replica renews it again.
  CHECK(plan_renewal(&*renewed, more, now).kind == Kind::Keep);
  CHECK(plan_renewal(&*renewed, settings(), now).kind == Kind::Keep);
}

TEST_CASE("a renewal due by time names only what is wanted, so a name nobody asks for leaves",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  auto both = settings(24h * 3650, 90s);
  both.names.push_back("localhost");
  const auto current = made(both);
  const auto one = settings(24h * 3650, 90s);
  CHECK(plan_renewal(&current, one, now).kind == Kind::Keep);  // it names more than wanted: fine
  const auto due = plan_renewal(&current, one, now + 65s);
  REQUIRE(due.kind == Kind::Serving);
  CHECK(due.names == one.names);
  auto renewed = renew_certificates(&current, due, one, now + 65s);
  REQUIRE(renewed.ok());
  CHECK(names_of(*renewed) == std::vector<std::string>{"127.0.0.1", "my-operator-webhook.ops.svc"});
}

TEST_CASE("replicas with different names, checking in turn, settle on one certificate after one renewal",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  auto first = settings();  // my-operator-webhook.ops.svc, 127.0.0.1
  auto second = settings();
  second.names = {"my-operator-webhook.ops.svc", "localhost", "webhook.example"};
  auto stored = made(first);
  int renewals = 0;
  for (int pass = 0; pass < 10; ++pass) {
    const auto& replica = pass % 2 == 0 ? first : second;
    const auto plan = plan_renewal(&stored, replica, now);
    if (plan.kind == Kind::Keep) continue;
    INFO("pass " << pass << ": " << plan.reason);
    auto renewed = renew_certificates(&stored, plan, replica, now);
    REQUIRE(renewed.ok());
    stored = *renewed;
    ++renewals;
  }
  CHECK(renewals == 1);
  CHECK(names_of(stored) ==
        std::vector<std::string>{"127.0.0.1", "localhost", "my-operator-webhook.ops.svc", "webhook.example"});
}

TEST_CASE("a certificate issued by any CA of a bundle, not only the first",
          "[runtime][webhook_certificates]") {
  const auto a = made(settings());
  const auto b = made(settings());
  const std::string bundle = first_certificate(b.ca_bundle) + first_certificate(a.ca_bundle);
  CHECK(issued_by_bundle(a.serving.certificate_pem, bundle));
  CHECK(issued_by_bundle(b.serving.certificate_pem, bundle));
  CHECK_FALSE(issued_by(a.serving.certificate_pem, bundle));  // issued_by looks at the first only
  CHECK_FALSE(issued_by_bundle(a.serving.certificate_pem, b.ca_bundle));
  CHECK_FALSE(issued_by_bundle(a.serving.certificate_pem, ""));
}
