// Serving certificates: a self-signed pair is usable and names what it was made for; a key of
// another certificate, garbage and empty files are refused with a message saying which part; the
// server context's cipher and session policy, seen from a client.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/context.hpp>

#include "runtime/certificates/tls_certificate.h"
#include "runtime/certificates/tls_context_provider.h"
#include "runtime/http/http_server.h"

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

// The server context's policy, seen by a client that offers only what the test chooses.
namespace {

// A self-signed RSA 2048 pair, to show that static RSA key exchange is refused even where the
// certificate would allow it.
CertificatePair rsa_pair() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  REQUIRE(key != nullptr);
  X509* certificate = X509_new();
  X509_set_version(certificate, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate), -60);
  X509_gmtime_adj(X509_getm_notAfter(certificate), 3600);
  X509_set_pubkey(certificate, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(certificate, X509_get_subject_name(certificate));
  REQUIRE(X509_sign(certificate, key, EVP_sha256()) != 0);
  CertificatePair pair;
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(out, certificate);
  char* data = nullptr;
  long length = BIO_get_mem_data(out, &data);
  pair.certificate_pem.assign(data, static_cast<std::size_t>(length));
  BIO_free(out);
  out = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
  length = BIO_get_mem_data(out, &data);
  pair.key_pem.assign(data, static_cast<std::size_t>(length));
  BIO_free(out);
  X509_free(certificate);
  EVP_PKEY_free(key);
  return pair;
}

struct Handshake {
  bool connected = false;
  std::string cipher;
  bool resumed = false;
  // The client's session after one request, if it connected.
  std::shared_ptr<SSL_SESSION> session;
};

// One TLS connection to 127.0.0.1:`port` offering only `tls12_ciphers` (TLS 1.2 at most) or any
// TLS 1.3 suite (when empty), resuming `resume` if given; one GET so that post-handshake messages
// (TLS 1.3 tickets) are read.
Handshake handshake(std::uint16_t port, const std::string& tls12_ciphers, SSL_SESSION* resume = nullptr) {
  Handshake result;
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(context, 0);  // the client allows anything: a refusal is the server's
  SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_CLIENT);
  if (!tls12_ciphers.empty()) {
    SSL_CTX_set_max_proto_version(context, TLS1_2_VERSION);
    REQUIRE(SSL_CTX_set_cipher_list(context, tls12_ciphers.c_str()) == 1);
  } else {
    SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  SSL* ssl = SSL_new(context);
  SSL_set_fd(ssl, fd);
  if (resume != nullptr) SSL_set_session(ssl, resume);
  if (SSL_connect(ssl) == 1) {
    result.connected = true;
    result.cipher = SSL_get_cipher_name(ssl);
    result.resumed = SSL_session_reused(ssl) == 1;
    const std::string request = "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    SSL_write(ssl, request.data(), static_cast<int>(request.size()));
    char buffer[4096];
    while (SSL_read(ssl, buffer, sizeof buffer) > 0) {
    }
    result.session.reset(SSL_get1_session(ssl), SSL_SESSION_free);
  }
  ERR_clear_error();
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(context);
  return result;
}

std::unique_ptr<HttpServer> tls_server(const CertificatePair& pair) {
  auto context = make_server_tls_context(pair);
  REQUIRE(context.ok());
  auto server = std::make_unique<HttpServer>("tls");
  server->serve_tls(std::make_shared<FixedTlsContextProvider>(*context));
  server->handle("/hello", [] { return HttpResponse{200, "text/plain", "hi"}; });
  REQUIRE(server->start("127.0.0.1:0").ok());
  return server;
}

}  // namespace

TEST_CASE("a server context agrees on ECDHE with AEAD ciphers only: no CBC, no static RSA",
          "[runtime][tls]") {
  SECTION("an ECDSA certificate (the operator's own)") {
    const auto server = tls_server(make_pair());
    CHECK(handshake(server->port(), "ECDHE-ECDSA-AES128-GCM-SHA256").connected);
    CHECK(handshake(server->port(), "ECDHE-ECDSA-AES256-GCM-SHA384").connected);
    CHECK(handshake(server->port(), "ECDHE-ECDSA-CHACHA20-POLY1305").connected);
    CHECK_FALSE(handshake(server->port(), "ECDHE-ECDSA-AES128-SHA256").connected);  // CBC
    CHECK_FALSE(handshake(server->port(), "ECDHE-ECDSA-AES256-SHA").connected);     // CBC
    const auto tls13 = handshake(server->port(), "");
    CHECK(tls13.connected);
    CHECK_THAT(tls13.cipher, Catch::StartsWith("TLS_"));
  }
  SECTION("an RSA certificate (cert-manager's default)") {
    const auto server = tls_server(rsa_pair());
    CHECK(handshake(server->port(), "ECDHE-RSA-AES128-GCM-SHA256").connected);
    CHECK(handshake(server->port(), "ECDHE-RSA-CHACHA20-POLY1305").connected);
    CHECK_FALSE(handshake(server->port(), "AES128-GCM-SHA256").connected);     // static RSA, even with GCM
    CHECK_FALSE(handshake(server->port(), "AES256-SHA256").connected);         // static RSA, CBC
    CHECK_FALSE(handshake(server->port(), "ECDHE-RSA-AES128-SHA").connected);  // CBC
    CHECK_FALSE(handshake(server->port(), "DHE-RSA-AES128-GCM-SHA256").connected);  // finite-field DH
  }
  // Both ends offer everything: the server's first choice.
  const auto server = tls_server(make_pair());
  const auto any12 = handshake(server->port(), "ALL:@SECLEVEL=0");
  CHECK(any12.connected);
  CHECK(any12.cipher == "ECDHE-ECDSA-AES128-GCM-SHA256");
}

TEST_CASE("a server context resumes no session: no tickets, no session cache", "[runtime][tls]") {
  const auto server = tls_server(make_pair());
  for (const std::string ciphers : {"", "ECDHE-ECDSA-AES128-GCM-SHA256"}) {
    INFO((ciphers.empty() ? "TLS 1.3" : "TLS 1.2"));
    const auto first = handshake(server->port(), ciphers);
    REQUIRE(first.connected);
    REQUIRE(first.session != nullptr);
    CHECK_FALSE(SSL_SESSION_has_ticket(first.session.get()));
    const auto second = handshake(server->port(), ciphers, first.session.get());
    CHECK(second.connected);
    CHECK_FALSE(second.resumed);
  }
}

TEST_CASE("the certificate a server context serves is described from the context", "[runtime][tls]") {
  const auto pair = make_pair();
  auto context = make_server_tls_context(pair);
  REQUIRE(context.ok());
  auto served = describe_served_certificate(**context);
  REQUIRE(served.ok());
  CHECK(served->serial == inspect_certificate_pair(pair)->serial);
  CHECK_FALSE(served->expired);
  boost::asio::ssl::context empty(boost::asio::ssl::context::tls_server);
  CHECK_FALSE(describe_served_certificate(empty).ok());
}
