// Where the webhook's self-managed certificates are kept: two Secrets in the operator's namespace.
//
// - The serving Secret (--webhook-secret, type kubernetes.io/tls): tls.crt, tls.key and ca.crt, the CA
//   bundle. What the webhook serves, and all that a reader of it (a pod mounting it, a person allowed
//   to read it) gets.
// - The CA Secret (--webhook-ca-secret, Opaque): ca.crt, the same bundle, and ca.key, the signing CA's
//   private key. Read only to sign a serving certificate or make a new CA; never served.
//
// Earlier versions kept ca.key in the serving Secret. read_layout moves such a CA into the CA Secret:
// the CA Secret is written first, then the serving Secret, whose certificate and bundle stay the same,
// so nothing stops serving. The serving Secret keeps a copy of ca.key for a grace period after the move
// (its time is the CA Secret's annotation): an operator of the earlier version still running (a
// rolling update) reads the CA from the serving Secret only, and finding no key there it would make a
// new CA on every pass. A CA that such an operator made meanwhile (one the CA Secret's bundle does not
// hold) is newer than the CA Secret's: it is moved in the same way, and the grace starts again.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "runtime/certificates/webhook_certificate_renewal.h"

namespace myop::runtime {

using SecretData = std::map<std::string, std::string>;  // key -> decoded value

// A Secret as read.
struct StoredSecret {
  SecretData data;
  // The CA Secret's: when a CA was last moved out of the serving Secret.
  std::optional<std::chrono::system_clock::time_point> ca_key_moved_at;
};

struct CertificateLayout {
  // Null when neither Secret exists; otherwise what they hold (parts may be missing or unusable:
  // plan_renewal says what to renew).
  std::optional<WebhookCertificates> certificates;
  // The serving Secret keeps a copy of ca.key (within the grace after a move).
  bool ca_key_in_serving = false;
  // The CA Secret's annotation to write: when the CA was last moved (now, when it moves in this pass).
  std::optional<std::chrono::system_clock::time_point> ca_key_moved_at;
  // Why the CA moves in this pass, for the log; empty when it does not.
  std::string moving;
};

// The certificates the two Secrets hold at `now` (null: absent), the CA of a serving Secret with ca.key
// moved into the CA Secret's place as the header says.
CertificateLayout read_layout(const std::optional<StoredSecret>& serving,
                              const std::optional<StoredSecret>& authority,
                              std::chrono::system_clock::time_point now, std::chrono::seconds grace);

// What each Secret holds for `certificates`.
SecretData serving_secret_data(const WebhookCertificates& certificates, bool with_ca_key);
SecretData ca_secret_data(const WebhookCertificates& certificates);

}  // namespace myop::runtime
