#include "runtime/certificates/webhook_certificate_metrics.h"

namespace myop::runtime {
namespace {

double unix_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

}  // namespace

WebhookCertificateMetrics::WebhookCertificateMetrics(prometheus::Registry* registry,
                                                     const std::string& prefix) {
  if (registry == nullptr) return;
  expiry_ =
      &prometheus::BuildGauge()
           .Name(prefix + "_expiry_timestamp_seconds")
           .Help("When the webhook certificate served (serving) and its signing CA (ca) expire, Unix time")
           .Register(*registry);
  auto& checks =
      prometheus::BuildCounter()
          .Name(prefix + "_checks_total")
          .Help(
              "Passes over the webhook certificates (read, renew when due, keep the CRDs' caBundle), "
              "by result")
          .Register(*registry);
  successes_ = &checks.Add({{"result", "success"}});
  failures_ = &checks.Add({{"result", "failure"}});
  last_success_ =
      &prometheus::BuildGauge()
           .Name(prefix + "_last_success_timestamp_seconds")
           .Help("When the last pass over the webhook certificates succeeded, Unix time; 0 before")
           .Register(*registry)
           .Add({});
  auto& renewals = prometheus::BuildCounter()
                       .Name(prefix + "_renewals_total")
                       .Help("Webhook certificates this replica made, by certificate")
                       .Register(*registry);
  serving_renewals_ = &renewals.Add({{"certificate", "serving"}});
  ca_renewals_ = &renewals.Add({{"certificate", "ca"}});
  ca_bundle_owned_ = &prometheus::BuildGauge()
                          .Name(prefix + "_ca_bundle_owned")
                          .Help(
                              "1 while this operator keeps the CRD's conversion caBundle; 0 while the CRD's "
                              "clientConfig names another webhook or none")
                          .Register(*registry);
}

void WebhookCertificateMetrics::pass_finished(bool succeeded, std::chrono::system_clock::time_point now) {
  if (successes_ == nullptr) return;
  (succeeded ? successes_ : failures_)->Increment();
  if (succeeded) last_success_->Set(unix_seconds(now));
}

void WebhookCertificateMetrics::expiry(std::chrono::system_clock::time_point serving,
                                       std::chrono::system_clock::time_point ca) {
  if (expiry_ == nullptr) return;
  if (serving_expiry_ == nullptr) {
    serving_expiry_ = &expiry_->Add({{"certificate", "serving"}});
    ca_expiry_ = &expiry_->Add({{"certificate", "ca"}});
  }
  serving_expiry_->Set(unix_seconds(serving));
  ca_expiry_->Set(unix_seconds(ca));
}

void WebhookCertificateMetrics::renewed(bool ca) {
  if (serving_renewals_ == nullptr) return;
  (ca ? ca_renewals_ : serving_renewals_)->Increment();
}

void WebhookCertificateMetrics::ca_bundle_owned(const std::string& crd, bool owned) {
  if (ca_bundle_owned_ == nullptr) return;
  ca_bundle_owned_->Add({{"crd", crd}}).Set(owned ? 1 : 0);
}

}  // namespace myop::runtime
