// The conversion webhook's certificates, managed by the operator itself so that no cert-manager is
// needed (as open-policy-agent/cert-controller does for controller-runtime webhooks):
//
// - A CA and a serving certificate it signs, in two Secrets of the operator's namespace
//   (runtime/certificates/webhook_certificate_secrets.h): the serving Secret (tls.crt, tls.key and ca.crt,
//   the CA bundle) that every replica serves, and the CA Secret (ca.crt and ca.key) whose key signs. The CA
//   key is never in what is served. The layout of earlier versions (ca.key in the serving Secret) is
//   moved without a pause in serving.
// - Whoever finds them missing or due makes the new ones (runtime/certificates/webhook_certificate_renewal.h:
// at a
//   third of the validity left, for a name not yet in the certificate, for a new CA), written with
//   create or a resourceVersion precondition, so two replicas never both win. A new CA goes into the
//   CRDs' caBundle before a certificate it signed is served.
// - Each CRD of `crd_names` whose conversion clientConfig names this operator's own Service or a URL
//   host its certificate names (runtime/certificates/ca_bundle_owner.h) gets ca.crt as its
//   spec.conversion.webhook.clientConfig.caBundle: a merge patch, only when it differs (nothing is
//   written in a steady state). A CRD whose clientConfig names another webhook (another release's
//   Service, another URL) is left alone and said so once in the log and in the metric
//   <prefix>_ca_bundle_owned; it is not an error of this replica.
// - Every pass is counted and timed in metrics (runtime/certificates/webhook_certificate_metrics.h), with the
//   expiry of the certificate served and of its CA, so that failing renewals reach an alert.
//
// The manager class runs passes on a period; the decisions are the pure functions of the files named
// above, unit-tested (test/unit/runtime/).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/client.h"
#include "runtime/certificates/ca_bundle_owner.h"
#include "runtime/certificates/tls_certificate.h"
#include "runtime/certificates/tls_context_provider.h"
#include "runtime/certificates/webhook_certificate_metrics.h"
#include "runtime/certificates/webhook_certificate_renewal.h"
#include "runtime/certificates/webhook_certificate_secrets.h"
#include "runtime/manager/periodic_runner.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

struct WebhookCertificateManagerOptions {
  std::shared_ptr<kube::Client> client;
  std::string secret_namespace;  // the operator's own namespace: its Service is there too
  std::string secret_name;       // the serving Secret
  std::string ca_secret_name;    // the CA Secret; empty: <secret_name>-ca
  // The Service the API server reaches the webhook by (in secret_namespace): a CRD whose clientConfig
  // names it, or a URL whose host is one of settings.names, is this operator's.
  std::string service_name;
  // CRDs whose caBundle follows ca.crt (those with strategy Webhook that name this operator's webhook).
  std::vector<std::string> crd_names;
  // The app.kubernetes.io/managed-by label of the Secrets it creates (the program's name); required,
  // as are settings.organization and settings.ca_name.
  std::string managed_by;
  WebhookCertificateSettings settings;
  std::chrono::seconds check_interval{std::chrono::minutes(1)};
  std::chrono::seconds retry_interval{std::chrono::seconds(5)};  // after a failed check
  // How long the serving Secret keeps a copy of ca.key after the CA moved out of it
  // (runtime/certificates/webhook_certificate_secrets.h), and the CA Secret's annotation that says since
  // when.
  std::chrono::seconds legacy_ca_key_grace{std::chrono::hours(1)};
  std::string ca_key_moved_annotation = "ca-key-moved-at";
  // Metrics <metrics_prefix>_... on `registry` (null: none).
  std::shared_ptr<prometheus::Registry> registry;
  std::string metrics_prefix = "webhook_certificate";
  // The checks run on it; certificates are judged by its wall time unless `now` is set.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  std::function<std::chrono::system_clock::time_point()> now;
};

// Keeps the Secrets and the CRDs' caBundle current and serves the serving Secret's pair. A Runnable
// that does not need leadership (every replica serves the webhook); synced once it serves a
// certificate.
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

  // One pass: read the Secrets, renew what is due (moving an earlier layout's CA), serve the pair,
  // bring the caBundle of the CRDs this operator owns up to date. Fails with the API error of the
  // step that failed, its message saying which step (the pass goes as far as it can).
  kube::Result<void> check();

  // Passes once the last pass has succeeded; fails with its error's message otherwise ("no
  // certificate served yet" before the first).
  base::Result<void, std::string> health() const;

  // What this operator's webhook is reached by (the clientConfig it owns).
  const WebhookIdentity& identity() const { return identity_; }

 private:
  // check() without the bookkeeping (health(), metrics).
  kube::Result<void> pass();
  // The certificates after reading both Secrets and writing what is due.
  kube::Result<WebhookCertificates> renew_stored();
  kube::Result<void> ensure_ca_bundle(const std::string& crd_name, const std::string& ca_bundle);
  void serve(const WebhookCertificates& certificates);
  // check() every check_interval, every retry_interval after a failure.
  StepResult step();

  WebhookCertificateManagerOptions options_;
  WebhookIdentity identity_;
  WebhookCertificateMetrics metrics_;
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::string served_certificate_;
  std::string problem_ = "no certificate served yet";
  std::vector<std::function<void()>> synced_callbacks_;
  // Per CRD, the target of a clientConfig that is not this operator's, last logged (check() only).
  std::map<std::string, std::string> crds_left_alone_;
  std::string published_bundle_;  // the ca.crt every owned CRD was last seen to carry (check() only)
  PeriodicRunner runner_;         // last: stops before what a check uses goes
};

}  // namespace myop::runtime
