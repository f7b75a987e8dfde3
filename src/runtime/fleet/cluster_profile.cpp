#include "runtime/fleet/cluster_profile.h"

#include <set>
#include <utility>

#include "base/base64.h"
#include "base/digest.h"
#include "kube/canonical_json.h"
#include "kube/json_parser.h"

namespace myop::runtime::fleet {
namespace {

kube::Error profile_error(const std::string& profile, const std::string& problem) {
  return kube::make_error(kube::Reason::InvalidConfiguration, "ClusterProfile " + profile + ": " + problem);
}

std::string string_member(const kube::JsonValue& object, std::string_view key) {
  const kube::JsonValue* value = kube::find_member(object, key);
  return value != nullptr && value->IsString() ? std::string(value->GetString(), value->GetStringLength())
                                               : std::string();
}

// The provider's exec command as the digest sees it (a change re-engages the members it serves).
std::string describe(const AccessProvider& provider) {
  std::string text = provider.name + "\n" + provider.exec.command + "\n" + provider.exec.api_version + "\n";
  for (const auto& arg : provider.exec.args) text.append(arg).append("\n");
  for (const auto& [name, value] : provider.exec.env)
    text.append(name).append("=").append(value).append("\n");
  return text + (provider.exec.provide_cluster_info ? "cluster-info" : "");
}

}  // namespace

kube::ResourceType cluster_profiles() {
  return {"multicluster.x-k8s.io", "v1alpha1", "clusterprofiles", true, "ClusterProfile"};
}

base::Result<std::vector<AccessProvider>, std::string> parse_access_providers(std::string_view json,
                                                                              std::string_view origin) {
  const std::string where(origin);
  auto document = kube::parse_json_document(json, kube::JsonLimits{});
  if (!document) return where + ": " + document.error().message;
  const kube::JsonValue* providers =
      document->IsObject() ? kube::find_member(*document, "providers") : nullptr;
  if (providers == nullptr || !providers->IsArray()) return where + ": no \"providers\" list";
  std::vector<AccessProvider> result;
  std::set<std::string> names;
  for (rapidjson::SizeType i = 0; i < providers->Size(); ++i) {
    const kube::JsonValue& entry = (*providers)[i];
    const std::string field = where + ": providers[" + std::to_string(i) + "]";
    if (!entry.IsObject()) return field + " is not an object";
    AccessProvider provider;
    provider.name = string_member(entry, "name");
    if (provider.name.empty()) return field + ".name is empty";
    if (!names.insert(provider.name).second) return field + ".name " + provider.name + " is given twice";
    const kube::JsonValue* exec = kube::find_member(entry, "execConfig");
    if (exec == nullptr || !exec->IsObject()) return field + ".execConfig is missing";
    provider.exec.command = string_member(*exec, "command");
    if (provider.exec.command.empty()) return field + ".execConfig.command is empty";
    if (const std::string version = string_member(*exec, "apiVersion"); !version.empty())
      provider.exec.api_version = version;
    if (const kube::JsonValue* args = kube::find_member(*exec, "args"); args != nullptr) {
      if (!args->IsArray()) return field + ".execConfig.args is not a list";
      for (const auto& arg : args->GetArray()) {
        if (!arg.IsString()) return field + ".execConfig.args holds a value that is not a string";
        provider.exec.args.emplace_back(arg.GetString(), arg.GetStringLength());
      }
    }
    if (const kube::JsonValue* env = kube::find_member(*exec, "env"); env != nullptr) {
      if (!env->IsArray()) return field + ".execConfig.env is not a list";
      for (const auto& variable : env->GetArray()) {
        if (!variable.IsObject() || string_member(variable, "name").empty())
          return field + ".execConfig.env holds an entry without a name";
        provider.exec.env.emplace_back(string_member(variable, "name"), string_member(variable, "value"));
      }
    }
    if (const kube::JsonValue* info = kube::find_member(*exec, "provideClusterInfo"); info != nullptr) {
      if (!info->IsBool()) return field + ".execConfig.provideClusterInfo is not a boolean";
      provider.exec.provide_cluster_info = info->GetBool();
    }
    // Nobody answers a prompt here.
    provider.exec.interactive_mode = "Never";
    result.push_back(std::move(provider));
  }
  return result;
}

kube::Result<MemberSource> read_cluster_profile(const kube::ObjectView& profile,
                                                const std::vector<AccessProvider>& providers) {
  const std::string id = std::string(profile.namespace_name()) + "/" + std::string(profile.name());
  if (profile.name().empty()) return profile_error(id, "metadata.name is empty");
  // status.accessProviders first, then the deprecated credentialProviders, each in order: the first
  // entry that names a provider of ours.
  const kube::JsonValue* chosen = nullptr;
  const AccessProvider* provider = nullptr;
  std::string field;
  std::vector<std::string> offered;
  for (const char* list : {"accessProviders", "credentialProviders"}) {
    const kube::JsonValue* entries = profile.find({"status", list});
    if (entries == nullptr || !entries->IsArray()) continue;
    for (rapidjson::SizeType i = 0; i < entries->Size() && chosen == nullptr; ++i) {
      const kube::JsonValue& entry = (*entries)[i];
      if (!entry.IsObject()) continue;
      const std::string name = string_member(entry, "name");
      offered.push_back(name);
      for (const AccessProvider& candidate : providers) {
        if (candidate.name == name) {
          chosen = &entry;
          provider = &candidate;
          field = std::string("status.") + list + "[" + std::to_string(i) + "]";
          break;
        }
      }
    }
    if (chosen != nullptr) break;
  }
  if (chosen == nullptr) {
    std::string names;
    for (const auto& name : offered) names += (names.empty() ? "" : ", ") + name;
    return profile_error(id, offered.empty() ? "status.accessProviders is empty"
                                             : "none of its access providers (" + names +
                                                   ") is configured in the operator's provider file");
  }
  const kube::JsonValue* cluster = kube::find_member(*chosen, "cluster");
  if (cluster == nullptr || !cluster->IsObject()) return profile_error(id, field + ".cluster is missing");
  if (const kube::JsonValue* insecure = kube::find_member(*cluster, "insecure-skip-tls-verify");
      insecure != nullptr && insecure->IsBool() && insecure->GetBool())
    return profile_error(
        id, field + ".cluster.insecure-skip-tls-verify is refused: the server is always verified");
  if (!string_member(*cluster, "proxy-url").empty())
    return profile_error(id, field + ".cluster.proxy-url is not supported");
  kube::ClientConfig config;
  config.server = string_member(*cluster, "server");
  if (config.server.rfind("https://", 0) != 0)
    return profile_error(id, field + ".cluster.server '" + config.server + "' is not an https:// URL");
  config.tls_server_name = string_member(*cluster, "tls-server-name");
  if (const std::string ca = string_member(*cluster, "certificate-authority-data"); !ca.empty()) {
    auto pem = base::decode_base64(ca);
    if (!pem) return profile_error(id, field + ".cluster.certificate-authority-data is not valid base64");
    config.ca_pem = std::move(*pem);
    config.ca_origin = "ClusterProfile " + id + " " + field + ".cluster.certificate-authority-data";
  }
  config.exec = provider->exec;
  config.source = "ClusterProfile " + id + " with access provider " + provider->name;
  return MemberSource{id, base::sha256_hex(kube::canonical_json(*chosen) + "\n" + describe(*provider)),
                      std::move(config)};
}

}  // namespace myop::runtime::fleet
