// Whose caBundle is a CRD's conversion caBundle: the operator that the CRD's
// spec.conversion.webhook.clientConfig names. One CRD, one owner: an operator writes its CA into the
// caBundle only when the clientConfig names its own Service (same namespace and name) or a URL whose host
// its serving certificate names. Anything else (another release's Service, another webhook's URL, no
// webhook conversion at all) it leaves alone, so two releases in two namespaces never overwrite each
// other's bundle.
//
// A URL is matched by host only: a certificate is issued for names, not ports, so two operators whose
// certificates name the same host would both be entitled to it; give each its own host name.
#pragma once

#include <string>
#include <vector>

#include "kube/object.h"

namespace myop::runtime {

// What this operator's webhook is reached by.
struct WebhookIdentity {
  std::string service_namespace;
  std::string service_name;
  // The names its serving certificate carries (the Service's DNS names, a webhook URL's host, ...).
  std::vector<std::string> hosts;
};

// "the Service team-a/my-operator-webhook, or a URL whose host is one of: ..." for the log.
std::string describe(const WebhookIdentity& identity);

struct CaBundleOwnership {
  enum class Kind {
    Owned,           // the clientConfig names this operator's webhook
    NotWebhook,      // spec.conversion.strategy is not Webhook: there is no caBundle to keep
    AnotherWebhook,  // the clientConfig names a Service or URL that is not this operator's
  };
  Kind kind = Kind::NotWebhook;
  // What the clientConfig names, e.g. "the Service team-a/my-operator-webhook" or
  // "the URL https://127.0.0.1:9443/convert"; "no webhook" when it names none.
  std::string target;
  bool owned() const { return kind == Kind::Owned; }
};

// The host of an https URL: "https://[::1]:9443/convert" -> "::1", "https://a.example/x" -> "a.example";
// empty when `url` has no host.
std::string url_host(std::string_view url);

// Whether this operator (`self`) owns the conversion caBundle of `crd` (a CustomResourceDefinition).
CaBundleOwnership decide_ca_bundle_owner(const kube::JsonValue& crd, const WebhookIdentity& self);

}  // namespace myop::runtime
