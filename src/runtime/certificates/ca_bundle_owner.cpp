#include "runtime/certificates/ca_bundle_owner.h"

#include <algorithm>
#include <cctype>

namespace myop::runtime {
namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

}  // namespace

std::string describe(const WebhookIdentity& identity) {
  std::string text = "the Service " + identity.service_namespace + "/" + identity.service_name;
  if (identity.hosts.empty()) return text;
  text += ", or a URL whose host is one of: ";
  for (std::size_t i = 0; i < identity.hosts.size(); ++i) text += (i == 0 ? "" : ", ") + identity.hosts[i];
  return text;
}

std::string url_host(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (rest.starts_with('[')) {  // an IPv6 literal, [::1]:443
    const auto close = rest.find(']');
    return close == std::string_view::npos ? std::string() : lower(rest.substr(1, close - 1));
  }
  return lower(rest.substr(0, rest.find(':')));
}

CaBundleOwnership decide_ca_bundle_owner(const kube::JsonValue& crd, const WebhookIdentity& self) {
  using Kind = CaBundleOwnership::Kind;
  const kube::ObjectView view(crd);
  const auto* strategy = view.find({"spec", "conversion", "strategy"});
  if (strategy == nullptr || !strategy->IsString() || std::string_view(strategy->GetString()) != "Webhook")
    return {Kind::NotWebhook, "no webhook"};
  const auto* service = view.find({"spec", "conversion", "webhook", "clientConfig", "service"});
  if (service != nullptr && service->IsObject()) {
    const std::string namespace_name = kube::string_at(*service, {"namespace"});
    const std::string name = kube::string_at(*service, {"name"});
    const bool own = namespace_name == self.service_namespace && name == self.service_name;
    return {own ? Kind::Owned : Kind::AnotherWebhook, "the Service " + namespace_name + "/" + name};
  }
  const std::string url = kube::string_at(crd, {"spec", "conversion", "webhook", "clientConfig", "url"});
  if (url.empty()) return {Kind::AnotherWebhook, "no webhook"};
  const std::string host = url_host(url);
  const bool own = !host.empty() && std::any_of(self.hosts.begin(), self.hosts.end(),
                                                [&](const std::string& name) { return lower(name) == host; });
  return {own ? Kind::Owned : Kind::AnotherWebhook, "the URL " + url};
}

}  // namespace myop::runtime
