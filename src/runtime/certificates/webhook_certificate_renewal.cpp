#include "runtime/certificates/webhook_certificate_renewal.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "base/time_format.h"

namespace myop::runtime {
namespace {

using SystemTime = std::chrono::system_clock::time_point;

constexpr std::string_view kPemBegin = "-----BEGIN CERTIFICATE-----";
constexpr std::string_view kPemEnd = "-----END CERTIFICATE-----";

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// `wanted` in its order, then the names of `existing` it lacks.
std::vector<std::string> joined(const std::vector<std::string>& wanted,
                                const std::vector<std::string>& existing) {
  std::vector<std::string> names = wanted;
  for (const auto& name : existing)
    if (!contains(names, name)) names.push_back(name);
  return names;
}

}  // namespace

std::vector<std::string> certificate_blocks(const std::string& bundle) {
  std::vector<std::string> blocks;
  std::size_t from = 0;
  while (true) {
    const auto begin = bundle.find(kPemBegin, from);
    if (begin == std::string::npos) break;
    const auto end = bundle.find(kPemEnd, begin);
    if (end == std::string::npos) break;
    from = end + kPemEnd.size();
    blocks.push_back(bundle.substr(begin, from - begin) + "\n");
  }
  return blocks;
}

std::string first_certificate(const std::string& bundle) {
  auto blocks = certificate_blocks(bundle);
  return blocks.empty() ? std::string() : blocks.front();
}

bool issued_by_bundle(const std::string& certificate_pem, const std::string& bundle) {
  const auto blocks = certificate_blocks(bundle);
  return std::any_of(blocks.begin(), blocks.end(),
                     [&](const std::string& ca) { return issued_by(certificate_pem, ca); });
}

RenewalPlan plan_renewal(const WebhookCertificates* current, const WebhookCertificateSettings& settings,
                         SystemTime now) {
  using Kind = RenewalPlan::Kind;
  if (current == nullptr) return {Kind::Authority, "there are no webhook certificates yet", settings.names};
  auto serving = inspect_certificate_pair(current->serving);
  // A serving certificate that is usable and not due keeps its names in the next one (see the header).
  const bool serving_due = !serving || serving->valid_until - now < settings.serving_validity / 3;
  const auto names = serving_due ? settings.names : joined(settings.names, serving->names);

  const CertificatePair ca{first_certificate(current->ca_bundle), current->ca_key};
  auto ca_description = inspect_certificate_pair(ca);
  if (!ca_description)
    return {Kind::Authority, "the CA is not usable: " + ca_description.error().message, names};
  if (!ca_description->certificate_authority)
    return {Kind::Authority, "the first certificate of ca.crt is not a CA", names};
  if (ca_description->valid_until - now < settings.ca_validity / 3)
    return {Kind::Authority,
            "the CA expires at " + base::format_rfc3339(ca_description->valid_until) +
                ", within a third of its validity",
            names};
  if (!serving)
    return {Kind::Serving, "the serving certificate is not usable: " + serving.error().message, names};
  if (!issued_by(current->serving.certificate_pem, ca.certificate_pem))
    return {Kind::Serving, "the serving certificate is not the current CA's", names};
  for (const auto& name : settings.names)
    if (!contains(serving->names, name))
      return {Kind::Serving, "the serving certificate does not name " + name, names};
  if (serving_due)
    return {Kind::Serving,
            "the serving certificate expires at " + base::format_rfc3339(serving->valid_until) +
                ", within a third of its validity",
            names};
  return {};
}

kube::Result<WebhookCertificates> renew_certificates(const WebhookCertificates* current,
                                                     const RenewalPlan& plan,
                                                     const WebhookCertificateSettings& settings,
                                                     SystemTime now) {
  if (settings.organization.empty() || settings.ca_name.empty())
    throw std::invalid_argument("WebhookCertificateSettings: organization and ca_name are required");
  WebhookCertificates renewed;
  if (plan.kind == RenewalPlan::Kind::Authority || current == nullptr) {
    CertificateSpec ca_spec;
    ca_spec.names = {settings.ca_name};
    ca_spec.organization = settings.organization;
    ca_spec.certificate_authority = true;
    ca_spec.validity = settings.ca_validity;
    auto ca = issue_certificate(ca_spec);
    if (!ca) return std::move(ca).error();
    renewed.ca_bundle = ca->certificate_pem;
    renewed.ca_key = ca->key_pem;
    // The CAs before it stay trusted until they expire.
    if (current != nullptr) {
      for (const auto& block : certificate_blocks(current->ca_bundle)) {
        auto described = describe_certificates(block);
        if (described && described->front().certificate_authority && described->front().valid_until > now)
          renewed.ca_bundle += block;
      }
    }
  } else {
    renewed.ca_bundle = current->ca_bundle;
    renewed.ca_key = current->ca_key;
  }
  if (plan.kind == RenewalPlan::Kind::Keep) {
    renewed.serving = current->serving;
    return renewed;
  }
  // A new CA: the serving certificate of the old one is kept while it is good for a while yet, so
  // that the new CA reaches the CRDs' caBundle (and the API server) before a certificate it signed is
  // served; the next renewal, once the bundle is published, replaces it (its CA is not the current).
  if (plan.kind == RenewalPlan::Kind::Authority && current != nullptr) {
    auto serving = inspect_certificate_pair(current->serving);
    const bool old_ca_kept =
        renewed.ca_bundle.find(first_certificate(current->ca_bundle)) != std::string::npos;
    if (serving && old_ca_kept && issued_by(current->serving.certificate_pem, current->ca_bundle) &&
        serving->valid_until - now >= settings.serving_validity / 3) {
      renewed.serving = current->serving;
      return renewed;
    }
  }
  CertificateSpec serving_spec;
  serving_spec.names = plan.names.empty() ? settings.names : plan.names;
  serving_spec.organization = settings.organization;
  serving_spec.validity = settings.serving_validity;
  const CertificatePair ca{first_certificate(renewed.ca_bundle), renewed.ca_key};
  auto serving = issue_certificate(serving_spec, &ca);
  if (!serving) return std::move(serving).error();
  renewed.serving = std::move(serving).value();
  return renewed;
}

}  // namespace myop::runtime
