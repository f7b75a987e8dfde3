// The conversion webhook's certificates, managed by the operator itself so that no cert-manager is
// needed (as open-policy-agent/cert-controller does for controller-runtime webhooks):
//
// - A CA and a serving certificate it signs live in one Secret (type kubernetes.io/tls: tls.crt and
//   tls.key, plus ca.crt, the CA bundle, and ca.key). Every replica reads it and serves its tls pair;
//   whoever finds it missing or due makes the new one, written with create or a resourceVersion
//   precondition, so two replicas never both win.
// - The serving certificate is renewed when a third of its validity is left, or when it does not
//   name what the webhook is reached by, or is not the CA's. The CA is renewed when a third of its
//   validity is left; the new CA goes first in ca.crt and the CAs before it stay there until they
//   expire, and the serving certificate of the old CA is served on until the CRDs carry the new
//   bundle (then the next pass replaces it), so an API server that still trusts the old bundle and a
//   replica that still serves the old certificate both keep working through a rotation.
// - Each named CRD whose conversion strategy is Webhook gets ca.crt as its
//   spec.conversion.webhook.clientConfig.caBundle (a merge patch, only when it differs: nothing is
//   written in a steady state).
//
// plan_renewal and renew_certificates are the decisions without I/O, unit-tested; the manager class
// runs them against the API server on a period.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "runtime/runnable.h"
#include "runtime/tls_certificate.h"
#include "runtime/tls_context_provider.h"

namespace myop::runtime {

struct WebhookCertificateSettings {
  // What the serving certificate names: the Service's DNS names, or the host of a webhook URL.
  std::vector<std::string> names;
  std::string organization = "my-operator";
  std::string ca_name = "my-operator-webhook-ca";
  std::chrono::seconds ca_validity{std::chrono::hours(24 * 365 * 10)};
  std::chrono::seconds serving_validity{std::chrono::hours(24 * 365)};
};

// What the Secret holds.
struct WebhookCertificates {
  std::string ca_bundle;    // ca.crt: the signing CA first, then earlier CAs not yet expired
  std::string ca_key;       // ca.key: the signing CA's key
  CertificatePair serving;  // tls.crt, tls.key
};

struct RenewalPlan {
  enum class Kind { Keep, Serving, Authority };
  Kind kind = Kind::Keep;
  std::string reason;  // why, for the log; empty with Keep
};

// What to renew, if anything, of `current` (null: there is no Secret yet) at `now`.
RenewalPlan plan_renewal(const WebhookCertificates* current, const WebhookCertificateSettings& settings,
                         std::chrono::system_clock::time_point now);

// The certificates after `plan` (not Keep): a new serving certificate from the current CA, or a new CA
// (first in the bundle, the earlier CAs of `current` not expired at `now` after it) and a serving
// certificate from it.
kube::Result<WebhookCertificates> renew_certificates(const WebhookCertificates* current,
                                                     const RenewalPlan& plan,
                                                     const WebhookCertificateSettings& settings,
                                                     std::chrono::system_clock::time_point now);

// The first PEM certificate of a bundle; empty when there is none.
std::string first_certificate(const std::string& bundle);

struct WebhookCertificateManagerOptions {
  std::shared_ptr<kube::Client> client;
  std::string secret_namespace;
  std::string secret_name;
  // CRDs whose caBundle follows ca.crt (those with strategy Webhook).
  std::vector<std::string> crd_names;
  WebhookCertificateSettings settings;
  std::chrono::seconds check_interval{std::chrono::minutes(1)};
  std::chrono::seconds retry_interval{std::chrono::seconds(5)};  // after a failed check
  std::function<std::chrono::system_clock::time_point()> now = [] {
    return std::chrono::system_clock::now();
  };
};

// Keeps the Secret and the CRDs' caBundle current and serves the Secret's pair. A Runnable that does
// not need leadership (every replica serves the webhook); synced once it serves a certificate.
class WebhookCertificateManager final : public Runnable, public TlsContextProvider {
 public:
  explicit WebhookCertificateManager(WebhookCertificateManagerOptions options);
  ~WebhookCertificateManager() override;
  WebhookCertificateManager(const WebhookCertificateManager&) = delete;
  WebhookCertificateManager& operator=(const WebhookCertificateManager&) = delete;

  std::string name() const override { return "webhook certificates"; }
  void start() override;
  void stop() override;
  bool has_synced() const override;
  void on_synced(std::function<void()> callback) override;

  std::shared_ptr<boost::asio::ssl::context> tls_context() override;

  // One pass: read the Secret, renew what is due, serve the pair, bring the CRDs' caBundle up to date.
  // An error text when any step failed (the pass goes as far as it can).
  std::optional<std::string> check();

  // Null until a first pass has succeeded; the last error otherwise (for the readiness check).
  std::optional<std::string> problem() const;

 private:
  std::optional<std::string> ensure_ca_bundle(const std::string& crd_name, const std::string& ca_bundle);
  void serve(const WebhookCertificates& certificates);
  void run(const std::stop_token& stop);

  WebhookCertificateManagerOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::string served_certificate_;
  std::string problem_ = "no certificate served yet";
  std::vector<std::function<void()>> synced_callbacks_;
  std::vector<std::string> crds_not_webhook_;  // logged once each
  std::string published_bundle_;               // the ca.crt every CRD was last seen to carry (check() only)
  std::jthread thread_;
};

}  // namespace myop::runtime
