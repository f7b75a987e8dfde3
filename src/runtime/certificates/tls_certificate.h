#pragma once
// Serving certificates for the HTTPS metrics and webhook servers: check that a PEM certificate
// (chain) and its private key belong together, describe the certificate for the log, build the
// OpenSSL server context (TLS 1.2 minimum, ECDHE and AEAD only), make a self-signed pair in memory
// when no certificate is given (as controller-runtime's secure metrics server does), and issue a CA
// and the serving certificates it signs (the webhook's self-managed certificates,
// runtime/certificates/webhook_certificates.h).
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/errors.h"

namespace boost::asio::ssl {
class context;
}

namespace myop::runtime {

struct CertificatePair {
  std::string certificate_pem;  // the leaf first, then any intermediates
  std::string key_pem;
};

// What the log says about a certificate; never the key.
struct CertificateDescription {
  std::string subject;             // "CN=my-operator"
  std::string serial;              // hex
  std::string not_after;           // "Nov 29 22:00:00 2027 GMT"
  std::string sha256_fingerprint;  // "AB:CD:..."
  std::vector<std::string> names;  // subjectAltName DNS names and IP addresses
  bool expired = false;
  bool certificate_authority = false;  // basicConstraints CA:TRUE
  std::chrono::system_clock::time_point valid_from;
  std::chrono::system_clock::time_point valid_until;
};

// The certificate's description when `pair` is a usable serving pair: the certificate parses,
// the key parses, and the key is the certificate's. An InvalidConfiguration error saying which
// part is wrong otherwise.
kube::Result<CertificateDescription> inspect_certificate_pair(const CertificatePair& pair);

// The TLS 1.2 cipher suites a server offers (OpenSSL names): ECDHE key exchange with AEAD ciphers,
// for ECDSA and RSA certificates, the server's order first.
inline constexpr const char* kServerTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// A TLS server context serving `pair`: TLS 1.2 or newer; in TLS 1.2 only kServerTls12Ciphers, in TLS
// 1.3 OpenSSL's default suites (all AEAD); no session tickets or session cache, no compression, no
// renegotiation.
kube::Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(const CertificatePair& pair);

// The leaf certificate a server context serves (what a client gets now); an error when it has none.
kube::Result<CertificateDescription> describe_served_certificate(boost::asio::ssl::context& context);

// What issue_certificate makes.
struct CertificateSpec {
  // DNS names or IP addresses, the first also the common name; a CA's first name is its common name
  // and it has no alternative names.
  std::vector<std::string> names;
  std::string organization;
  bool certificate_authority = false;
  std::chrono::seconds validity{std::chrono::hours(24 * 365)};
};

// An ECDSA P-256 certificate and key for `spec` with a random serial, valid from a little before now
// (clock skew: an hour, or a quarter of the validity when that is shorter) for spec.validity from now;
// signed by `issuer` (a CA's pair) or self-signed when it is null. A serving certificate is for
// serverAuth with digitalSignature; a CA may sign certificates (keyCertSign, pathlen 0).
kube::Result<CertificatePair> issue_certificate(const CertificateSpec& spec,
                                                const CertificatePair* issuer = nullptr);

// Whether the first certificate of `certificate_pem` carries a valid signature of the first
// certificate of `issuer_pem` (a CA), and names it as its issuer. False when either does not parse.
bool issued_by(const std::string& certificate_pem, const std::string& issuer_pem);

// Each certificate of a PEM bundle (a CA bundle: several certificates one after the other), in order.
// An InvalidConfiguration error when a block does not parse or there is none.
kube::Result<std::vector<CertificateDescription>> describe_certificates(const std::string& pem);

// A self-signed ECDSA P-256 certificate for `names` (DNS names or IP addresses; the first is
// the common name), valid for one year from now, with a random serial.
kube::Result<CertificatePair> generate_self_signed_certificate(const std::vector<std::string>& names,
                                                               std::string_view organization = {});

}  // namespace myop::runtime
