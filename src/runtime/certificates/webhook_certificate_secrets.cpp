#include "runtime/certificates/webhook_certificate_secrets.h"

namespace myop::runtime {
namespace {

std::string field(const std::optional<StoredSecret>& secret, const std::string& key) {
  if (!secret) return {};
  const auto found = secret->data.find(key);
  return found == secret->data.end() ? std::string() : found->second;
}

// `first`'s certificates, then those of `second` it does not hold: no CA trusted before is dropped.
std::string merged_bundle(const std::string& first, const std::string& second) {
  std::string bundle = first;
  for (const auto& block : certificate_blocks(second))
    if (bundle.find(block) == std::string::npos) bundle += block;
  return bundle;
}

}  // namespace

CertificateLayout read_layout(const std::optional<StoredSecret>& serving,
                              const std::optional<StoredSecret>& authority,
                              std::chrono::system_clock::time_point now, std::chrono::seconds grace) {
  CertificateLayout layout;
  if (!serving && !authority) return layout;
  WebhookCertificates certificates;
  certificates.serving = {field(serving, "tls.crt"), field(serving, "tls.key")};
  const std::string serving_bundle = field(serving, "ca.crt");
  const std::string serving_key = field(serving, "ca.key");
  const std::string authority_bundle = field(authority, "ca.crt");
  // The serving Secret holds a CA key the CA Secret does not know: the layout of earlier versions
  // (no CA Secret yet), or a CA such a version made after the move.
  const std::string serving_ca = first_certificate(serving_bundle);
  const bool serving_ca_is_new = !serving_key.empty() && !serving_ca.empty() &&
                                 (!authority || authority_bundle.find(serving_ca) == std::string::npos);
  if (serving_ca_is_new) {
    certificates.ca_bundle = merged_bundle(serving_bundle, authority_bundle);
    certificates.ca_key = serving_key;
    layout.ca_key_in_serving = true;
    layout.ca_key_moved_at = now;
    layout.moving = authority
                        ? "the serving Secret holds a CA that the CA Secret does not (made by an operator "
                          "of an earlier version): moving it into the CA Secret"
                        : "moving the CA out of the serving Secret (the layout of earlier versions) "
                          "into a Secret of its own";
  } else if (authority) {
    certificates.ca_bundle = authority_bundle;
    certificates.ca_key = field(authority, "ca.key");
    layout.ca_key_moved_at = authority->ca_key_moved_at;
    layout.ca_key_in_serving =
        !serving_key.empty() && authority->ca_key_moved_at && now - *authority->ca_key_moved_at < grace;
  } else {
    // No CA Secret and no key: the CA is renewed, the bundle the serving Secret had stays trusted.
    certificates.ca_bundle = serving_bundle;
  }
  layout.certificates = std::move(certificates);
  return layout;
}

SecretData serving_secret_data(const WebhookCertificates& certificates, bool with_ca_key) {
  SecretData data{{"ca.crt", certificates.ca_bundle},
                  {"tls.crt", certificates.serving.certificate_pem},
                  {"tls.key", certificates.serving.key_pem}};
  if (with_ca_key) data["ca.key"] = certificates.ca_key;
  return data;
}

SecretData ca_secret_data(const WebhookCertificates& certificates) {
  return {{"ca.crt", certificates.ca_bundle}, {"ca.key", certificates.ca_key}};
}

}  // namespace myop::runtime
