// When the webhook's self-managed certificates are renewed, and what a renewal makes: decisions
// without I/O (runtime/certificates/webhook_certificates.h runs them against the API server).
//
// - The serving certificate is renewed when a third of its validity is left, when it does not name
//   every name wanted, or when it is not the current CA's. A renewal for a missing name issues the
//   names wanted together with those the certificate already had: replicas started with different
//   names (--webhook-cert-names) then converge on one certificate that names them all instead of
//   each replacing the other's on every pass. A renewal due by time (or of an unusable certificate)
//   issues only the names wanted, so a name no replica asks for any more leaves at that renewal.
// - The CA is renewed when a third of its validity is left: the new CA goes first in the bundle and
//   the CAs before it stay there until they expire, and the serving certificate of the old CA is kept
//   (when it is not due itself) until the new bundle has reached the CRDs.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kube/errors.h"
#include "runtime/certificates/tls_certificate.h"

namespace myop::runtime {

struct WebhookCertificateSettings {
  // What the serving certificate names: the Service's DNS names, or the host of a webhook URL.
  std::vector<std::string> names;
  // The certificates' subject O and the CA's name (the program's, e.g. "<program>-webhook-ca");
  // required: renew_certificates refuses empty ones.
  std::string organization;
  std::string ca_name;
  std::chrono::seconds ca_validity{std::chrono::hours(24 * 365 * 10)};
  std::chrono::seconds serving_validity{std::chrono::hours(24 * 365)};
};

// The CA and the serving certificate, wherever they are kept.
struct WebhookCertificates {
  std::string ca_bundle;    // the signing CA first, then earlier CAs not yet expired
  std::string ca_key;       // the signing CA's key
  CertificatePair serving;  // tls.crt, tls.key
};

struct RenewalPlan {
  enum class Kind { Keep, Serving, Authority };
  Kind kind = Kind::Keep;
  std::string reason;  // why, for the log; empty with Keep
  // What a new serving certificate names (empty with Keep): the names wanted, and with a renewal
  // for a missing name also those of the current certificate.
  std::vector<std::string> names;
};

// What to renew, if anything, of `current` (null: there are no certificates yet) at `now`.
RenewalPlan plan_renewal(const WebhookCertificates* current, const WebhookCertificateSettings& settings,
                         std::chrono::system_clock::time_point now);

// The certificates after `plan` (not Keep): a new serving certificate from the current CA, or a new CA
// (first in the bundle, the earlier CAs of `current` not expired at `now` after it) and a serving
// certificate from it. The serving certificate names plan.names (settings.names when empty).
kube::Result<WebhookCertificates> renew_certificates(const WebhookCertificates* current,
                                                     const RenewalPlan& plan,
                                                     const WebhookCertificateSettings& settings,
                                                     std::chrono::system_clock::time_point now);

// The first PEM certificate of a bundle; empty when there is none.
std::string first_certificate(const std::string& bundle);

// Whether `certificate_pem` was issued by one of the CAs of `bundle` (issued_by looks at the first only).
bool issued_by_bundle(const std::string& certificate_pem, const std::string& bundle);

// The PEM certificates of a bundle, each with its trailing newline.
std::vector<std::string> certificate_blocks(const std::string& bundle);

}  // namespace myop::runtime
