#include "runtime/fleet/kubeconfig_secret.h"

#include <utility>

#include "base/base64.h"
#include "base/digest.h"

namespace myop::runtime::fleet {
namespace {

kube::Error secret_error(const std::string& secret, const std::string& problem) {
  return kube::make_error(kube::Reason::InvalidConfiguration, "Secret " + secret + ": " + problem);
}

// The first file reference or exec plugin of the context the Secret's kubeconfig uses, as the field
// that names it; empty when the context is self-contained. A context or entry that does not exist is
// left to resolve_kubeconfig, which names it.
std::string outside_reference(const kube::Kubeconfig& kubeconfig) {
  const auto context = kubeconfig.contexts.find(kubeconfig.current_context);
  if (context == kubeconfig.contexts.end()) return {};
  if (const auto cluster = kubeconfig.clusters.find(context->second.cluster);
      cluster != kubeconfig.clusters.end()) {
    const std::string field = "clusters[name=" + cluster->first + "].cluster.";
    if (!cluster->second.certificate_authority.empty()) return field + "certificate-authority";
  }
  if (const auto user = kubeconfig.users.find(context->second.user); user != kubeconfig.users.end()) {
    const std::string field = "users[name=" + user->first + "].user.";
    if (!user->second.client_certificate.empty()) return field + "client-certificate";
    if (!user->second.client_key.empty()) return field + "client-key";
    if (!user->second.token_file.empty()) return field + "tokenFile";
    if (user->second.exec) return field + "exec";
  }
  return {};
}

}  // namespace

kube::Result<MemberSource> read_kubeconfig_secret(const kube::ObjectView& secret) {
  const std::string id = std::string(secret.namespace_name()) + "/" + std::string(secret.name());
  if (secret.name().empty()) return secret_error(id, "metadata.name is empty");
  const kube::JsonValue* encoded = secret.find({"data", kKubeconfigSecretKey});
  if (encoded == nullptr)
    return secret_error(id, "data." + std::string(kKubeconfigSecretKey) +
                                " is missing: a kubeconfig Secret " +
                                "holds the member's kubeconfig under that key");
  if (!encoded->IsString())
    return secret_error(id, "data." + std::string(kKubeconfigSecretKey) + " is not a string");
  auto bytes = base::decode_base64(std::string_view(encoded->GetString(), encoded->GetStringLength()));
  if (!bytes) return secret_error(id, "data." + std::string(kKubeconfigSecretKey) + " is not valid base64");
  if (bytes->empty()) return secret_error(id, "data." + std::string(kKubeconfigSecretKey) + " is empty");

  // Messages of the kubeconfig reader name this "file": the Secret and its key.
  const std::string origin = "Secret " + id + " data." + std::string(kKubeconfigSecretKey);
  auto kubeconfig = kube::parse_kubeconfig(*bytes, origin);
  if (!kubeconfig) return std::move(kubeconfig).error();
  if (const std::string field = outside_reference(kubeconfig.value()); !field.empty())
    return secret_error(id, "data." + std::string(kKubeconfigSecretKey) + ": " + field +
                                " is refused: a kubeconfig from a Secret must be self-contained (the "
                                "certificate-authority-data, client-certificate-data, client-key-data or "
                                "token fields), never a file of the operator's or a command to run");
  auto config = kube::resolve_kubeconfig(kubeconfig.value(), "");
  if (!config) return std::move(config).error();
  return MemberSource{std::string(secret.name()), kubeconfig_digest(secret), std::move(config).value()};
}

std::string kubeconfig_digest(const kube::ObjectView& secret) {
  const kube::JsonValue* encoded = secret.find({"data", kKubeconfigSecretKey});
  if (encoded == nullptr || !encoded->IsString()) return {};
  return base::sha256_hex(std::string_view(encoded->GetString(), encoded->GetStringLength()));
}

}  // namespace myop::runtime::fleet
