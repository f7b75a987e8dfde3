// Serving certificates: a self-signed pair is usable and names what it was made for; a key of
// another certificate, garbage and empty files are refused with a message saying which part.
#include <catch2/catch.hpp>

#include <algorithm>

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
