// The two Secrets of the webhook's self-managed certificates
// (src/runtime/certificates/webhook_certificate_secrets.h): the CA key apart from what is served, and the
// move from the one-Secret layout of earlier versions without a pause in serving and without making an
// operator of the earlier version renew its CA.
#include "runtime/certificates/webhook_certificate_secrets.h"

#include <catch2/catch.hpp>

using namespace myop::runtime;
using namespace std::chrono_literals;
using Kind = RenewalPlan::Kind;

namespace {

WebhookCertificateSettings settings() {
  WebhookCertificateSettings result;
  result.names = {"my-operator-webhook.ops.svc"};
  result.organization = "test-operator";
  result.ca_name = "test-operator-webhook-ca";
  return result;
}

WebhookCertificates made() {
  auto certificates = renew_certificates(nullptr, {Kind::Authority, "test", {}}, settings(),
                                         std::chrono::system_clock::now());
  REQUIRE(certificates.ok());
  return *certificates;
}

// The serving Secret of earlier versions: all four keys.
StoredSecret legacy(const WebhookCertificates& certificates) {
  return {serving_secret_data(certificates, true), std::nullopt};
}

StoredSecret authority(const WebhookCertificates& certificates,
                       std::optional<std::chrono::system_clock::time_point> moved_at = std::nullopt) {
  return {ca_secret_data(certificates), moved_at};
}

}  // namespace

TEST_CASE("the serving Secret holds what is served and the bundle, the CA Secret the key",
          "[runtime][webhook_certificates]") {
  const auto certificates = made();
  const auto serving = serving_secret_data(certificates, false);
  CHECK(serving == SecretData{{"ca.crt", certificates.ca_bundle},
                              {"tls.crt", certificates.serving.certificate_pem},
                              {"tls.key", certificates.serving.key_pem}});
  CHECK(serving_secret_data(certificates, true).at("ca.key") == certificates.ca_key);
  CHECK(ca_secret_data(certificates) ==
        SecretData{{"ca.crt", certificates.ca_bundle}, {"ca.key", certificates.ca_key}});
}

TEST_CASE("no Secret gives no certificates, the two Secrets of this version the CA Secret's CA",
          "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  CHECK_FALSE(read_layout(std::nullopt, std::nullopt, now, 1h).certificates);

  const auto certificates = made();
  const auto layout = read_layout(StoredSecret{serving_secret_data(certificates, false), {}},
                                  authority(certificates), now, 1h);
  REQUIRE(layout.certificates);
  CHECK(layout.certificates->ca_bundle == certificates.ca_bundle);
  CHECK(layout.certificates->ca_key == certificates.ca_key);
  CHECK(layout.certificates->serving.certificate_pem == certificates.serving.certificate_pem);
  CHECK_FALSE(layout.ca_key_in_serving);
  CHECK_FALSE(layout.ca_key_moved_at);
  CHECK(layout.moving.empty());
  CHECK(plan_renewal(&*layout.certificates, settings(), now).kind == Kind::Keep);

  // A serving Secret whose CA Secret is gone: the bundle stays trusted, a new CA is due.
  const auto orphan =
      read_layout(StoredSecret{serving_secret_data(certificates, false), {}}, std::nullopt, now, 1h);
  REQUIRE(orphan.certificates);
  CHECK(orphan.certificates->ca_bundle == certificates.ca_bundle);
  CHECK(orphan.certificates->ca_key.empty());
  CHECK(plan_renewal(&*orphan.certificates, settings(), now).kind == Kind::Authority);
}

TEST_CASE(
    "a serving Secret of the earlier layout: its CA moves, the serving Secret keeps a copy of the key "
    "for the grace, then drops it",
    "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto certificates = made();

  // First pass: no CA Secret yet. Same certificates, nothing to renew: only the move.
  const auto moving = read_layout(legacy(certificates), std::nullopt, now, 1h);
  REQUIRE(moving.certificates);
  CHECK(moving.certificates->ca_key == certificates.ca_key);
  CHECK(moving.certificates->ca_bundle == certificates.ca_bundle);
  CHECK(moving.certificates->serving.certificate_pem == certificates.serving.certificate_pem);
  CHECK(plan_renewal(&*moving.certificates, settings(), now).kind == Kind::Keep);
  CHECK(moving.ca_key_in_serving);
  CHECK(moving.ca_key_moved_at == now);
  CHECK_THAT(moving.moving, Catch::Contains("moving the CA out of the serving Secret"));

  // Within the grace: the copy stays (an operator of the earlier version reads it), nothing moves.
  const auto kept = read_layout(legacy(certificates), authority(certificates, now), now + 59min, 1h);
  CHECK(kept.ca_key_in_serving);
  CHECK(kept.ca_key_moved_at == now);
  CHECK(kept.moving.empty());
  CHECK(kept.certificates->ca_key == certificates.ca_key);

  // After it: the copy goes.
  const auto dropped = read_layout(legacy(certificates), authority(certificates, now), now + 61min, 1h);
  CHECK_FALSE(dropped.ca_key_in_serving);
  CHECK(dropped.moving.empty());
  CHECK(serving_secret_data(*dropped.certificates, dropped.ca_key_in_serving).count("ca.key") == 0);

  // A CA Secret that does not say when its CA moved keeps no copy either.
  CHECK_FALSE(read_layout(legacy(certificates), authority(certificates), now, 1h).ca_key_in_serving);
}

TEST_CASE(
    "a CA that an operator of the earlier version made in the serving Secret after the move is moved too",
    "[runtime][webhook_certificates]") {
  const auto now = std::chrono::system_clock::now();
  const auto moved = made();
  // The earlier version found no ca.key in the serving Secret and made a new CA; its bundle keeps the
  // one moved (renew_certificates keeps the earlier CAs).
  auto newer = renew_certificates(&moved, {Kind::Authority, "test", {}}, settings(), now);
  REQUIRE(newer.ok());
  const auto layout = read_layout(legacy(*newer), authority(moved, now - 2h), now, 1h);
  REQUIRE(layout.certificates);
  CHECK(layout.certificates->ca_key == newer->ca_key);
  CHECK(first_certificate(layout.certificates->ca_bundle) == first_certificate(newer->ca_bundle));
  CHECK(layout.certificates->ca_bundle.find(first_certificate(moved.ca_bundle)) != std::string::npos);
  CHECK(layout.ca_key_in_serving);
  CHECK(layout.ca_key_moved_at == now);  // the grace starts again
  CHECK_THAT(layout.moving, Catch::Contains("an earlier version"));

  // Whatever the CA Secret held stays in the bundle, even when the serving Secret's lost it.
  WebhookCertificates lost = *newer;
  lost.ca_bundle = first_certificate(newer->ca_bundle);
  const auto merged = read_layout(legacy(lost), authority(moved, now - 2h), now, 1h);
  CHECK(merged.certificates->ca_bundle == lost.ca_bundle + first_certificate(moved.ca_bundle));

  // A serving Secret whose copy is of a CA the CA Secret has replaced since (it is in its bundle, not
  // first) is stale: the CA Secret's CA stays.
  auto renewed = renew_certificates(&moved, {Kind::Authority, "test", {}}, settings(), now);
  REQUIRE(renewed.ok());
  const auto stale = read_layout(legacy(moved), authority(*renewed, now), now, 1h);
  CHECK(stale.certificates->ca_key == renewed->ca_key);
  CHECK(stale.certificates->ca_bundle == renewed->ca_bundle);
  CHECK(stale.moving.empty());
  CHECK(stale.ca_key_in_serving);  // within the grace: rewritten with the current key
}
