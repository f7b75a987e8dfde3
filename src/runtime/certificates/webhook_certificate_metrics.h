#pragma once
// The metrics of the webhook's self-managed certificates (runtime/certificates/webhook_certificates.h), so
// that an expiry that comes near and renewals that keep failing reach an alert, not only the log. Names are
// <prefix>_<name>; the prefix comes from the program (runtime knows no product name):
//
//   <prefix>_expiry_timestamp_seconds{certificate="serving|ca"}  gauge: notAfter of the certificate
//       served and of the signing CA, Unix seconds; absent until a first pass has read them
//   <prefix>_checks_total{result="success|failure"}               counter: passes, by result
//   <prefix>_last_success_timestamp_seconds                       gauge: end of the last pass that
//       succeeded, Unix seconds; 0 until one has
//   <prefix>_renewals_total{certificate="serving|ca"}             counter: certificates this replica made
//   <prefix>_ca_bundle_owned{crd}                                 gauge: 1 while this operator keeps the
//       CRD's conversion caBundle, 0 while the CRD's clientConfig names another webhook (or none)
//
// The crd label holds the names given in --webhook-crds, a handful at most.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

namespace myop::runtime {

class WebhookCertificateMetrics {
 public:
  // Null `registry`: every call does nothing.
  WebhookCertificateMetrics(prometheus::Registry* registry, const std::string& prefix);

  void pass_finished(bool succeeded, std::chrono::system_clock::time_point now);
  void expiry(std::chrono::system_clock::time_point serving, std::chrono::system_clock::time_point ca);
  void renewed(bool ca);
  void ca_bundle_owned(const std::string& crd, bool owned);

 private:
  prometheus::Gauge* serving_expiry_ = nullptr;
  prometheus::Gauge* ca_expiry_ = nullptr;
  prometheus::Family<prometheus::Gauge>* expiry_ = nullptr;
  prometheus::Counter* successes_ = nullptr;
  prometheus::Counter* failures_ = nullptr;
  prometheus::Gauge* last_success_ = nullptr;
  prometheus::Counter* serving_renewals_ = nullptr;
  prometheus::Counter* ca_renewals_ = nullptr;
  prometheus::Family<prometheus::Gauge>* ca_bundle_owned_ = nullptr;
};

}  // namespace myop::runtime
