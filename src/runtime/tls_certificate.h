#pragma once
// Serving certificates for the HTTPS metrics server: check that a PEM certificate (chain) and
// its private key belong together, describe the certificate for the log, build the OpenSSL
// server context (TLS 1.2 minimum), and make a self-signed pair in memory when no certificate
// is given (as controller-runtime's secure metrics server does).
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
};

// The certificate's description when `pair` is a usable serving pair: the certificate parses,
// the key parses, and the key is the certificate's. An InvalidConfiguration error saying which
// part is wrong otherwise.
kube::Result<CertificateDescription> inspect_certificate_pair(const CertificatePair& pair);

// A TLS server context serving `pair`: TLS 1.2 or newer, no compression, no renegotiation.
kube::Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(const CertificatePair& pair);

// A self-signed ECDSA P-256 certificate for `names` (DNS names or IP addresses; the first is
// the common name), valid for one year from now, with a random serial.
kube::Result<CertificatePair> generate_self_signed_certificate(const std::vector<std::string>& names,
                                                               std::string_view organization = {});

}  // namespace myop::runtime
