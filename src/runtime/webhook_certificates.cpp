#include "runtime/webhook_certificates.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <utility>

#include "base/base64.h"
#include "base/time_format.h"
#include "kube/object.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

using SystemTime = std::chrono::system_clock::time_point;

constexpr std::string_view kPemEnd = "-----END CERTIFICATE-----";

// The PEM blocks of a bundle, each with its trailing newline.
std::vector<std::string> certificate_blocks(const std::string& bundle) {
  std::vector<std::string> blocks;
  std::size_t from = 0;
  while (true) {
    const auto begin = bundle.find("-----BEGIN CERTIFICATE-----", from);
    if (begin == std::string::npos) break;
    const auto end = bundle.find(kPemEnd, begin);
    if (end == std::string::npos) break;
    from = end + kPemEnd.size();
    blocks.push_back(bundle.substr(begin, from - begin) + "\n");
  }
  return blocks;
}

std::optional<std::string> data_field(const rapidjson::Value& secret, const char* key) {
  const auto data = secret.FindMember("data");
  if (data == secret.MemberEnd() || !data->value.IsObject()) return std::nullopt;
  const auto field = data->value.FindMember(key);
  if (field == data->value.MemberEnd() || !field->value.IsString()) return std::nullopt;
  return base::decode_base64(std::string_view(field->value.GetString(), field->value.GetStringLength()));
}

}  // namespace

std::string first_certificate(const std::string& bundle) {
  auto blocks = certificate_blocks(bundle);
  return blocks.empty() ? std::string() : blocks.front();
}

RenewalPlan plan_renewal(const WebhookCertificates* current, const WebhookCertificateSettings& settings,
                         SystemTime now) {
  using Kind = RenewalPlan::Kind;
  if (current == nullptr) return {Kind::Authority, "there are no webhook certificates yet"};
  const CertificatePair ca{first_certificate(current->ca_bundle), current->ca_key};
  auto ca_description = inspect_certificate_pair(ca);
  if (!ca_description) return {Kind::Authority, "the CA is not usable: " + ca_description.error().message};
  if (!ca_description->certificate_authority)
    return {Kind::Authority, "the first certificate of ca.crt is not a CA"};
  if (ca_description->valid_until - now < settings.ca_validity / 3)
    return {Kind::Authority, "the CA expires at " + base::format_rfc3339(ca_description->valid_until) +
                                 ", within a third of its validity"};
  auto serving = inspect_certificate_pair(current->serving);
  if (!serving) return {Kind::Serving, "the serving certificate is not usable: " + serving.error().message};
  if (!issued_by(current->serving.certificate_pem, ca.certificate_pem))
    return {Kind::Serving, "the serving certificate is not the current CA's"};
  for (const auto& name : settings.names)
    if (std::find(serving->names.begin(), serving->names.end(), name) == serving->names.end())
      return {Kind::Serving, "the serving certificate does not name " + name};
  if (serving->valid_until - now < settings.serving_validity / 3)
    return {Kind::Serving, "the serving certificate expires at " +
                               base::format_rfc3339(serving->valid_until) +
                               ", within a third of its validity"};
  return {};
}

kube::Result<WebhookCertificates> renew_certificates(const WebhookCertificates* current,
                                                     const RenewalPlan& plan,
                                                     const WebhookCertificateSettings& settings,
                                                     SystemTime now) {
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
  serving_spec.names = settings.names;
  serving_spec.organization = settings.organization;
  serving_spec.validity = settings.serving_validity;
  const CertificatePair ca{first_certificate(renewed.ca_bundle), renewed.ca_key};
  auto serving = issue_certificate(serving_spec, &ca);
  if (!serving) return std::move(serving).error();
  renewed.serving = std::move(serving).value();
  return renewed;
}

WebhookCertificateManager::WebhookCertificateManager(WebhookCertificateManagerOptions options)
    : options_(std::move(options)) {}

WebhookCertificateManager::~WebhookCertificateManager() { stop(); }

void WebhookCertificateManager::start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
}

void WebhookCertificateManager::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
}

bool WebhookCertificateManager::has_synced() const {
  std::lock_guard lock(mutex_);
  return context_ != nullptr;
}

void WebhookCertificateManager::on_synced(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (context_ == nullptr) {
      synced_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

std::shared_ptr<boost::asio::ssl::context> WebhookCertificateManager::tls_context() {
  std::lock_guard lock(mutex_);
  return context_;
}

std::optional<std::string> WebhookCertificateManager::problem() const {
  std::lock_guard lock(mutex_);
  if (problem_.empty()) return std::nullopt;
  return problem_;
}

void WebhookCertificateManager::run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    const auto failed = check();
    {
      std::lock_guard lock(mutex_);
      problem_ = failed.value_or("");
    }
    if (failed)
      log(spdlog::level::err, "Cannot keep the webhook certificates current",
          {{"secret", options_.secret_namespace + "/" + options_.secret_name}, {"error", *failed}});
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, failed ? options_.retry_interval : options_.check_interval,
                   [] { return false; });
  }
}

namespace {

WebhookCertificates certificates_of(const rapidjson::Value& secret) {
  WebhookCertificates certificates;
  certificates.ca_bundle = data_field(secret, "ca.crt").value_or("");
  certificates.ca_key = data_field(secret, "ca.key").value_or("");
  certificates.serving.certificate_pem = data_field(secret, "tls.crt").value_or("");
  certificates.serving.key_pem = data_field(secret, "tls.key").value_or("");
  return certificates;
}

// `secret` (as read, or a new one) holding `certificates`: its metadata (resourceVersion, the
// precondition of the update, labels, annotations) kept, type and data replaced.
kube::Object secret_with(const rapidjson::Value* secret, const std::string& namespace_name,
                         const std::string& name, const WebhookCertificates& certificates) {
  kube::Object object = secret != nullptr ? kube::Object::copy_of(*secret) : kube::Object();
  auto& allocator = object.allocator();
  auto& root = object.json();
  if (secret == nullptr) {
    root.AddMember("apiVersion", "v1", allocator);
    root.AddMember("kind", "Secret", allocator);
    object.set_name(name);
    object.set_namespace_name(namespace_name);
    object.set_label("app.kubernetes.io/managed-by", "my-operator");
  }
  kube::erase_member(root, "type");
  kube::erase_member(root, "data");
  kube::erase_member(root, "stringData");
  root.AddMember("type", "kubernetes.io/tls", allocator);
  kube::JsonValue data(rapidjson::kObjectType);
  data.AddMember("ca.crt", kube::json_string(base::encode_base64(certificates.ca_bundle), allocator),
                 allocator);
  data.AddMember("ca.key", kube::json_string(base::encode_base64(certificates.ca_key), allocator), allocator);
  data.AddMember("tls.crt",
                 kube::json_string(base::encode_base64(certificates.serving.certificate_pem), allocator),
                 allocator);
  data.AddMember("tls.key", kube::json_string(base::encode_base64(certificates.serving.key_pem), allocator),
                 allocator);
  root.AddMember("data", data, allocator);
  return object;
}

}  // namespace

std::optional<std::string> WebhookCertificateManager::check() {
  const std::string where = options_.secret_namespace + "/" + options_.secret_name;
  WebhookCertificates served;
  // A write that loses a race (another replica renewed first) reads again: at most three rounds.
  for (int round = 0;; ++round) {
    auto found =
        options_.client->get(kube::resources::secrets(), options_.secret_namespace, options_.secret_name);
    if (!found && !kube::is_not_found(found.error()))
      return "cannot read the Secret " + where + ": " + found.error().to_string();
    std::optional<WebhookCertificates> current;
    if (found) current = certificates_of(*found);
    const auto plan = plan_renewal(current ? &*current : nullptr, options_.settings, options_.now());
    // A serving certificate of an earlier CA is replaced only once the CRDs carry the current bundle
    // (published by an earlier pass), unless it is due anyway.
    const bool waits_for_bundle =
        plan.kind == RenewalPlan::Kind::Serving && current && !options_.crd_names.empty() &&
        published_bundle_ != current->ca_bundle &&
        !issued_by(current->serving.certificate_pem, first_certificate(current->ca_bundle)) &&
        issued_by(current->serving.certificate_pem, current->ca_bundle);
    if (plan.kind == RenewalPlan::Kind::Keep || waits_for_bundle) {
      served = std::move(*current);
      break;
    }
    if (round == 3) return "the Secret " + where + " kept changing under the renewal";
    auto renewed = renew_certificates(current ? &*current : nullptr, plan, options_.settings, options_.now());
    if (!renewed) return "cannot make the webhook certificates: " + renewed.error().to_string();
    log(spdlog::level::info,
        plan.kind == RenewalPlan::Kind::Authority ? "Renewing the webhook CA and serving certificate"
                                                  : "Renewing the webhook serving certificate",
        {{"secret", where}, {"reason", plan.reason}});
    const kube::Object secret = secret_with(found ? &found.value() : nullptr, options_.secret_namespace,
                                            options_.secret_name, *renewed);
    auto written =
        found ? options_.client->update(kube::resources::secrets(), options_.secret_namespace, secret.json())
              : options_.client->create(kube::resources::secrets(), options_.secret_namespace, secret.json());
    if (written) {
      served = std::move(renewed).value();
      break;
    }
    if (!kube::is_conflict(written.error()) && !kube::is_already_exists(written.error()))
      return "cannot write the Secret " + where + ": " + written.error().to_string();
  }
  serve(served);
  std::optional<std::string> problem;
  for (const auto& crd : options_.crd_names)
    if (auto failed = ensure_ca_bundle(crd, served.ca_bundle)) problem = std::move(failed);
  if (!problem) published_bundle_ = served.ca_bundle;
  return problem;
}

void WebhookCertificateManager::serve(const WebhookCertificates& certificates) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (certificates.serving.certificate_pem == served_certificate_ && context_ != nullptr) return;
  }
  auto context = make_server_tls_context(certificates.serving);
  if (!context) {
    log(spdlog::level::err, "Cannot serve the webhook certificate", {{"error", context.error().to_string()}});
    return;
  }
  if (auto description = inspect_certificate_pair(certificates.serving))
    log(spdlog::level::info, "Serving the webhook certificate",
        {{"serial", description->serial}, {"notAfter", description->not_after}});
  {
    std::lock_guard lock(mutex_);
    context_ = std::move(context).value();
    served_certificate_ = certificates.serving.certificate_pem;
    callbacks.swap(synced_callbacks_);
  }
  for (auto& callback : callbacks) callback();
}

std::optional<std::string> WebhookCertificateManager::ensure_ca_bundle(const std::string& crd_name,
                                                                       const std::string& ca_bundle) {
  auto crd = options_.client->get(kube::resources::custom_resource_definitions(), "", crd_name);
  if (!crd) return "cannot read the CRD " + crd_name + ": " + crd.error().to_string();
  const kube::ObjectView view(*crd);
  const auto* strategy = view.find({"spec", "conversion", "strategy"});
  if (strategy == nullptr || !strategy->IsString() || std::string_view(strategy->GetString()) != "Webhook") {
    std::lock_guard lock(mutex_);
    if (std::find(crds_not_webhook_.begin(), crds_not_webhook_.end(), crd_name) == crds_not_webhook_.end()) {
      crds_not_webhook_.push_back(crd_name);
      log(spdlog::level::info, "The CRD does not convert through a webhook; its caBundle is left alone",
          {{"crd", crd_name}});
    }
    return std::nullopt;
  }
  const std::string wanted = base::encode_base64(ca_bundle);
  const auto* current = view.find({"spec", "conversion", "webhook", "clientConfig", "caBundle"});
  if (current != nullptr && current->IsString() && wanted == current->GetString()) return std::nullopt;
  const std::string patch =
      R"({"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":")" + wanted + R"("}}}}})";
  auto patched = options_.client->patch(kube::resources::custom_resource_definitions(), "", crd_name,
                                        kube::PatchType::Merge, patch);
  if (!patched) return "cannot set the caBundle of the CRD " + crd_name + ": " + patched.error().to_string();
  log(spdlog::level::info, "Set the CRD's conversion webhook caBundle", {{"crd", crd_name}});
  return std::nullopt;
}

}  // namespace myop::runtime
