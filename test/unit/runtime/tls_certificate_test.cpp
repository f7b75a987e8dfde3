// Serving certificates: a self-signed pair is usable and names what it was made for; a key of
// another certificate, garbage and empty files are refused with a message saying which part.
#include <catch2/catch.hpp>

#include <algorithm>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "runtime/tls_certificate.h"

using namespace myop::runtime;

namespace {

CertificatePair make_pair(const std::vector<std::string>& names = {"localhost", "127.0.0.1"}) {
  auto pair = generate_self_signed_certificate(names);
  REQUIRE(pair.ok());
  return *pair;
}

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

TEST_CASE("a self-signed certificate names its hosts, is valid now, and differs every time",
          "[runtime][tls]") {
  const CertificatePair first = make_pair({"my-operator", "localhost", "127.0.0.1", "::1"});
  CHECK(first.certificate_pem.find("-----BEGIN CERTIFICATE-----") == 0);
  CHECK(first.key_pem.find("PRIVATE KEY-----") != std::string::npos);
  auto description = inspect_certificate_pair(first);
  REQUIRE(description.ok());
  CHECK_THAT(description->subject, Catch::Contains("CN=my-operator"));
  CHECK(contains(description->names, "my-operator"));
  CHECK(contains(description->names, "localhost"));
  CHECK(contains(description->names, "127.0.0.1"));
  CHECK(contains(description->names, "::1"));
  CHECK_FALSE(description->expired);
  CHECK(description->sha256_fingerprint.size() == 32 * 3 - 1);

  auto second = inspect_certificate_pair(make_pair({"my-operator"}));
  REQUIRE(second.ok());
  CHECK(second->serial != description->serial);
  CHECK(second->sha256_fingerprint != description->sha256_fingerprint);
}

TEST_CASE("a pair whose key is not the certificate's, or that is not PEM, is refused", "[runtime][tls]") {
  const CertificatePair one = make_pair();
  const CertificatePair other = make_pair();
  auto mismatched = inspect_certificate_pair({one.certificate_pem, other.key_pem});
  REQUIRE_FALSE(mismatched.ok());
  CHECK_THAT(mismatched.error().message, Catch::Contains("does not belong to the certificate"));
  CHECK_FALSE(make_server_tls_context({one.certificate_pem, other.key_pem}).ok());

  auto garbage = inspect_certificate_pair({"not a certificate", one.key_pem});
  REQUIRE_FALSE(garbage.ok());
  CHECK_THAT(garbage.error().message, Catch::Contains("certificate is not a PEM"));
  auto bad_key = inspect_certificate_pair({one.certificate_pem, "-----BEGIN PRIVATE KEY-----\nAAAA\n"});
  REQUIRE_FALSE(bad_key.ok());
  CHECK_THAT(bad_key.error().message, Catch::Contains("private key is not"));
  CHECK_FALSE(inspect_certificate_pair({"", one.key_pem}).ok());
  CHECK_FALSE(inspect_certificate_pair({one.certificate_pem, ""}).ok());

  CHECK(make_server_tls_context(one).ok());
}

namespace {

// Whether `leaf_pem` verifies against the CA certificates of `bundle_pem` for serverAuth, by OpenSSL.
bool verifies(const std::string& leaf_pem, const std::string& bundle_pem) {
  BIO* leaf_bio = BIO_new_mem_buf(leaf_pem.data(), static_cast<int>(leaf_pem.size()));
  X509* leaf = PEM_read_bio_X509(leaf_bio, nullptr, nullptr, nullptr);
  BIO_free(leaf_bio);
  X509_STORE* store = X509_STORE_new();
  BIO* bundle_bio = BIO_new_mem_buf(bundle_pem.data(), static_cast<int>(bundle_pem.size()));
  while (X509* ca = PEM_read_bio_X509(bundle_bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, ca);
    X509_free(ca);
  }
  ERR_clear_error();
  BIO_free(bundle_bio);
  X509_STORE_CTX* context = X509_STORE_CTX_new();
  X509_STORE_CTX_init(context, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER);
  const bool ok = X509_verify_cert(context) == 1;
  X509_STORE_CTX_free(context);
  X509_STORE_free(store);
  X509_free(leaf);
  return ok;
}

CertificatePair issue(const CertificateSpec& spec, const CertificatePair* issuer = nullptr) {
  auto pair = issue_certificate(spec, issuer);
  INFO((pair.ok() ? std::string() : pair.error().to_string()));
  REQUIRE(pair.ok());
  return *pair;
}

}  // namespace

TEST_CASE("a CA issues serving certificates that verify against it and no other", "[runtime][tls]") {
  using namespace std::chrono_literals;
  const auto ca = issue({{"my-operator-webhook-ca"}, "myorg.io", true, 24h * 3650});
  const auto other_ca = issue({{"another-ca"}, "", true, 24h});
  const auto leaf =
      issue({{"my-operator-webhook.ops.svc", "my-operator-webhook.ops.svc.cluster.local", "127.0.0.1"},
             "",
             false,
             90s},
            &ca);
  CHECK(verifies(leaf.certificate_pem, ca.certificate_pem));
  CHECK_FALSE(verifies(leaf.certificate_pem, other_ca.certificate_pem));
  // A bundle that holds the signing CA among others (a CA being rotated) verifies it.
  CHECK(verifies(leaf.certificate_pem, other_ca.certificate_pem + ca.certificate_pem));

  auto described = inspect_certificate_pair(leaf);
  REQUIRE(described.ok());
  CHECK_FALSE(described->certificate_authority);
  CHECK(contains(described->names, "my-operator-webhook.ops.svc"));
  CHECK(contains(described->names, "127.0.0.1"));
  // 90 s from now, from a quarter of that before now (the skew allowance of a short certificate).
  const auto now = std::chrono::system_clock::now();
  CHECK(described->valid_until > now + 80s);
  CHECK(described->valid_until < now + 100s);
  CHECK(described->valid_from < now - 15s);
  CHECK(described->valid_from > now - 30s);

  auto ca_described = inspect_certificate_pair(ca);
  REQUIRE(ca_described.ok());
  CHECK(ca_described->certificate_authority);
  CHECK(ca_described->subject == "CN=my-operator-webhook-ca,O=myorg.io");
  // A CA's first name is its common name only.
  CHECK(ca_described->names.empty());
}

TEST_CASE("a serving certificate cannot issue others, and bad issuers and specs are refused",
          "[runtime][tls]") {
  using namespace std::chrono_literals;
  const auto leaf = issue({{"localhost"}, "", false, 1h});
  auto refused = issue_certificate({{"x"}, "", false, 1h}, &leaf);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("not a CA"));

  const auto ca = issue({{"ca"}, "", true, 1h});
  const auto other = issue({{"other-ca"}, "", true, 1h});
  const CertificatePair mixed{ca.certificate_pem, other.key_pem};
  refused = issue_certificate({{"x"}, "", false, 1h}, &mixed);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("does not belong"));

  const CertificatePair garbage{"not pem", "not pem"};
  refused = issue_certificate({{"x"}, "", false, 1h}, &garbage);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("does not parse"));

  CHECK_FALSE(issue_certificate({{}, "", false, 1h}).ok());
  CHECK_FALSE(issue_certificate({{"x"}, "", false, 0s}).ok());
}

TEST_CASE("a PEM bundle is described certificate by certificate, and garbage and an empty one are refused",
          "[runtime][tls]") {
  using namespace std::chrono_literals;
  const auto first = issue({{"first-ca"}, "", true, 2h});
  const auto second = issue({{"second-ca"}, "", true, 1h});
  auto bundle = describe_certificates(first.certificate_pem + second.certificate_pem);
  REQUIRE(bundle.ok());
  REQUIRE(bundle->size() == 2);
  CHECK((*bundle)[0].subject == "CN=first-ca");
  CHECK((*bundle)[1].subject == "CN=second-ca");
  CHECK((*bundle)[0].valid_until > (*bundle)[1].valid_until);

  CHECK_FALSE(describe_certificates("").ok());
  CHECK_FALSE(describe_certificates("hello").ok());
  auto broken = first.certificate_pem;
  broken.insert(broken.find('\n') + 5, "!!!!");
  CHECK_FALSE(describe_certificates(second.certificate_pem + broken).ok());
}
