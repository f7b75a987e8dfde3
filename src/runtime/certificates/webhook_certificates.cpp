#include "runtime/certificates/webhook_certificates.h"

#include <rapidjson/document.h>

#include <stdexcept>
#include <utility>

#include "base/base64.h"
#include "base/time_format.h"
#include "kube/object.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

// A Secret as read: its data decoded (a value that is not base64 counts as absent), and the CA
// Secret's annotation of when its CA was moved.
StoredSecret stored_secret(const rapidjson::Value& secret, const std::string& moved_annotation) {
  StoredSecret stored;
  if (const auto* data = kube::find_member(secret, "data"); data != nullptr && data->IsObject()) {
    for (const auto& member : data->GetObject()) {
      if (!member.value.IsString()) continue;
      auto decoded =
          base::decode_base64(std::string_view(member.value.GetString(), member.value.GetStringLength()));
      if (decoded) stored.data[member.name.GetString()] = std::move(*decoded);
    }
  }
  if (auto moved = kube::ObjectView(secret).annotation(moved_annotation))
    stored.ca_key_moved_at = base::parse_rfc3339(*moved);
  return stored;
}

std::string moved_at_text(const std::optional<std::chrono::system_clock::time_point>& moved) {
  return moved ? base::format_rfc3339(*moved) : std::string();
}

// `secret` (as read, or a new one labelled managed-by `managed_by`) holding `data`: its metadata
// (resourceVersion, the precondition of the update, labels, annotations) kept, type and data replaced.
kube::Object secret_with(const rapidjson::Value* secret, const std::string& namespace_name,
                         const std::string& name, const std::string& managed_by, const char* type,
                         const SecretData& data) {
  kube::Object object = secret != nullptr ? kube::Object::copy_of(*secret) : kube::Object();
  auto& allocator = object.allocator();
  auto& root = object.json();
  if (secret == nullptr) {
    root.AddMember("apiVersion", "v1", allocator);
    root.AddMember("kind", "Secret", allocator);
    object.set_name(name);
    object.set_namespace_name(namespace_name);
    object.set_label("app.kubernetes.io/managed-by", managed_by);
  }
  kube::erase_member(root, "type");
  kube::erase_member(root, "data");
  kube::erase_member(root, "stringData");
  root.AddMember("type", kube::json_string(type, allocator), allocator);
  kube::JsonValue encoded(rapidjson::kObjectType);
  for (const auto& [key, value] : data)
    encoded.AddMember(kube::json_string(key, allocator),
                      kube::json_string(base::encode_base64(value), allocator), allocator);
  root.AddMember("data", encoded, allocator);
  return object;
}

WebhookCertificateManagerOptions with_defaults(WebhookCertificateManagerOptions options) {
  if (options.ca_secret_name.empty()) options.ca_secret_name = options.secret_name + "-ca";
  if (!options.clock) options.clock = base::system_clock();
  if (!options.now) options.now = [clock = options.clock] { return clock->wall_now(); };
  return options;
}

// `error` with what was being done in front of its message; the reason stays.
kube::Error failure(const kube::Error& error, std::string doing) {
  return kube::make_error(error.reason, std::move(doing) + ": " + error.to_string(), error.http_code);
}

}  // namespace

WebhookCertificateManager::WebhookCertificateManager(WebhookCertificateManagerOptions options)
    : options_(with_defaults(std::move(options))),
      identity_{options_.secret_namespace, options_.service_name, options_.settings.names},
      metrics_(options_.registry.get(), options_.metrics_prefix),
      runner_({.name = "webhook certificates",
               .period = options_.check_interval,
               .retry = base::constant_backoff(options_.retry_interval),
               .clock = options_.clock},
              [this](const std::stop_token&) { return step(); }) {
  if (options_.managed_by.empty() || options_.settings.organization.empty() ||
      options_.settings.ca_name.empty())
    throw std::invalid_argument(
        "WebhookCertificateManagerOptions: managed_by, settings.organization and settings.ca_name are "
        "required");
}

WebhookCertificateManager::~WebhookCertificateManager() { stop(); }

void WebhookCertificateManager::start() { runner_.start(); }

void WebhookCertificateManager::stop() { runner_.stop(); }

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

base::Result<void, std::string> WebhookCertificateManager::health() const {
  std::lock_guard lock(mutex_);
  if (problem_.empty()) return {};
  return base::fail(problem_);
}

StepResult WebhookCertificateManager::step() {
  const auto checked = check();
  if (checked) return StepResult::ok();
  log(spdlog::level::err, "Cannot keep the webhook certificates current",
      {{"secret", options_.secret_namespace + "/" + options_.secret_name},
       {"error", checked.error().message}});
  return StepResult::retry();
}

kube::Result<void> WebhookCertificateManager::check() {
  auto checked = pass();
  {
    std::lock_guard lock(mutex_);
    problem_ = checked ? "" : checked.error().message;
  }
  metrics_.pass_finished(checked.ok(), options_.now());
  return checked;
}

kube::Result<void> WebhookCertificateManager::pass() {
  auto stored = renew_stored();
  if (!stored) return std::move(stored).error();
  const WebhookCertificates served = std::move(stored).value();
  serve(served);
  auto serving = inspect_certificate_pair(served.serving);
  auto ca = describe_certificates(first_certificate(served.ca_bundle));
  if (serving && ca) metrics_.expiry(serving->valid_until, ca->front().valid_until);
  kube::Result<void> published;
  for (const auto& crd : options_.crd_names)
    if (auto ensured = ensure_ca_bundle(crd, served.ca_bundle); !ensured) published = std::move(ensured);
  if (published) published_bundle_ = served.ca_bundle;
  return published;
}

kube::Result<WebhookCertificates> WebhookCertificateManager::renew_stored() {
  const std::string& namespace_name = options_.secret_namespace;
  const std::string where = namespace_name + "/" + options_.secret_name;
  const std::string ca_where = namespace_name + "/" + options_.ca_secret_name;
  // A write that loses a race (another replica renewed first) reads again: at most three rounds.
  for (int round = 0;; ++round) {
    auto serving_read =
        options_.client->get(kube::resources::secrets(), namespace_name, options_.secret_name);
    if (!serving_read && !kube::is_not_found(serving_read.error()))
      return failure(serving_read.error(), "cannot read the Secret " + where);
    auto authority_read =
        options_.client->get(kube::resources::secrets(), namespace_name, options_.ca_secret_name);
    if (!authority_read && !kube::is_not_found(authority_read.error()))
      return failure(authority_read.error(), "cannot read the Secret " + ca_where);
    std::optional<StoredSecret> serving;
    std::optional<StoredSecret> authority;
    if (serving_read) serving = stored_secret(*serving_read, options_.ca_key_moved_annotation);
    if (authority_read) authority = stored_secret(*authority_read, options_.ca_key_moved_annotation);

    const auto now = options_.now();
    const CertificateLayout layout = read_layout(serving, authority, now, options_.legacy_ca_key_grace);
    const WebhookCertificates* current = layout.certificates ? &*layout.certificates : nullptr;
    const auto plan = plan_renewal(current, options_.settings, now);
    // A serving certificate of an earlier CA is replaced only once the CRDs carry the current bundle
    // (published by an earlier pass), unless it is due anyway.
    const bool waits_for_bundle =
        plan.kind == RenewalPlan::Kind::Serving && current != nullptr && !options_.crd_names.empty() &&
        published_bundle_ != current->ca_bundle &&
        !issued_by(current->serving.certificate_pem, first_certificate(current->ca_bundle)) &&
        issued_by_bundle(current->serving.certificate_pem, current->ca_bundle);
    WebhookCertificates next = current != nullptr ? *current : WebhookCertificates{};
    if (plan.kind != RenewalPlan::Kind::Keep && !waits_for_bundle) {
      auto renewed = renew_certificates(current, plan, options_.settings, now);
      if (!renewed) return failure(renewed.error(), "cannot make the webhook certificates");
      log(spdlog::level::info,
          plan.kind == RenewalPlan::Kind::Authority ? "Renewing the webhook CA and serving certificate"
                                                    : "Renewing the webhook serving certificate",
          {{"secret", where}, {"reason", plan.reason}});
      next = std::move(renewed).value();
    }
    if (!layout.moving.empty())
      log(spdlog::level::info, "Moving the webhook CA into its own Secret",
          {{"from", where}, {"to", ca_where}, {"reason", layout.moving}});

    // The CA Secret first: the key of what the serving Secret will hold is kept before it is served.
    const SecretData ca_data = ca_secret_data(next);
    const bool ca_differs =
        !authority || authority->data != ca_data ||
        moved_at_text(authority->ca_key_moved_at) != moved_at_text(layout.ca_key_moved_at);
    if (ca_differs) {
      kube::Object secret = secret_with(authority_read ? &authority_read.value() : nullptr, namespace_name,
                                        options_.ca_secret_name, options_.managed_by, "Opaque", ca_data);
      if (layout.ca_key_moved_at)
        secret.set_annotation(options_.ca_key_moved_annotation, moved_at_text(layout.ca_key_moved_at));
      auto written = authority_read
                         ? options_.client->update(kube::resources::secrets(), namespace_name, secret.json())
                         : options_.client->create(kube::resources::secrets(), namespace_name, secret.json());
      if (!written) {
        if (!kube::is_conflict(written.error()) && !kube::is_already_exists(written.error()))
          return failure(written.error(), "cannot write the Secret " + ca_where);
        if (round == 2) return failure(written.error(), "the Secret " + ca_where + " kept changing");
        continue;
      }
    }
    const SecretData serving_data = serving_secret_data(next, layout.ca_key_in_serving);
    if (!serving || serving->data != serving_data) {
      const kube::Object secret =
          secret_with(serving_read ? &serving_read.value() : nullptr, namespace_name, options_.secret_name,
                      options_.managed_by, "kubernetes.io/tls", serving_data);
      auto written = serving_read
                         ? options_.client->update(kube::resources::secrets(), namespace_name, secret.json())
                         : options_.client->create(kube::resources::secrets(), namespace_name, secret.json());
      if (!written) {
        if (!kube::is_conflict(written.error()) && !kube::is_already_exists(written.error()))
          return failure(written.error(), "cannot write the Secret " + where);
        if (round == 2) return failure(written.error(), "the Secret " + where + " kept changing");
        continue;
      }
    }
    if (current == nullptr || first_certificate(next.ca_bundle) != first_certificate(current->ca_bundle))
      metrics_.renewed(true);
    if (current == nullptr || next.serving.certificate_pem != current->serving.certificate_pem)
      metrics_.renewed(false);
    return next;
  }
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

kube::Result<void> WebhookCertificateManager::ensure_ca_bundle(const std::string& crd_name,
                                                               const std::string& ca_bundle) {
  auto crd = options_.client->get(kube::resources::custom_resource_definitions(), "", crd_name);
  if (!crd) return failure(crd.error(), "cannot read the CRD " + crd_name);
  const auto ownership = decide_ca_bundle_owner(*crd, identity_);
  metrics_.ca_bundle_owned(crd_name, ownership.owned());
  if (!ownership.owned()) {
    // Said once, and again only when what the CRD names changes.
    auto& logged = crds_left_alone_[crd_name];
    if (logged != ownership.target) {
      logged = ownership.target;
      if (ownership.kind == CaBundleOwnership::Kind::NotWebhook)
        log(spdlog::level::info, "The CRD does not convert through a webhook; its caBundle is left alone",
            {{"crd", crd_name}});
      else
        log(spdlog::level::info,
            "The CRD's conversion webhook is not this operator's; its caBundle is left to the webhook it "
            "names",
            {{"crd", crd_name}, {"clientConfig", ownership.target}, {"thisOperator", describe(identity_)}});
    }
    return {};
  }
  if (crds_left_alone_.erase(crd_name) > 0)
    log(spdlog::level::info, "The CRD's conversion webhook is this operator's now; keeping its caBundle",
        {{"crd", crd_name}, {"clientConfig", ownership.target}});
  const std::string wanted = base::encode_base64(ca_bundle);
  const auto* current =
      kube::ObjectView(*crd).find({"spec", "conversion", "webhook", "clientConfig", "caBundle"});
  if (current != nullptr && current->IsString() && wanted == current->GetString()) return {};
  const std::string patch =
      R"({"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":")" + wanted + R"("}}}}})";
  auto patched = options_.client->patch(kube::resources::custom_resource_definitions(), "", crd_name,
                                        kube::PatchType::Merge, patch);
  if (!patched) return failure(patched.error(), "cannot set the caBundle of the CRD " + crd_name);
  log(spdlog::level::info, "Set the CRD's conversion webhook caBundle", {{"crd", crd_name}});
  return {};
}

}  // namespace myop::runtime
