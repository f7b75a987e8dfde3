#include "kube/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "base/base64.h"
#include "base/text.h"

namespace myop::kube {
namespace {

namespace fs = std::filesystem;

// Thrown only inside this file and always caught at its public functions: it carries the field path of
// a malformed kubeconfig up through the recursive reading code.
struct FieldError {
  std::string field;
  std::string problem;
};

Error config_error(const std::string& file, const std::string& field, const std::string& problem) {
  std::string message = "kubeconfig " + file + ": ";
  if (!field.empty()) message += field + ": ";
  message += problem;
  return make_error(Reason::InvalidConfiguration, std::move(message));
}

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return make_error(Reason::InvalidConfiguration,
                      "cannot read " + path + ": " + std::generic_category().message(error));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return make_error(Reason::InvalidConfiguration, "cannot read " + path + ": read error");
  return content.str();
}

// ---- YAML reading with field paths -------------------------------------------------------------

std::string scalar(const YAML::Node& node, const std::string& field) {
  if (!node || node.IsNull()) return {};
  if (!node.IsScalar()) throw FieldError{field, "must be a string"};
  return node.Scalar();
}

bool boolean(const YAML::Node& node, const std::string& field) {
  if (!node || node.IsNull()) return false;
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
    throw FieldError{
        field, "must be true or false, not \"" + (node.IsScalar() ? node.Scalar() : "a map or list") + "\""};
  return value;
}

std::string base64_field(const YAML::Node& node, const std::string& field) {
  const std::string text = scalar(node, field);
  if (text.empty()) return {};
  auto decoded = base::decode_base64(text);
  if (!decoded) throw FieldError{field, "is not valid base64"};
  return *decoded;
}

void require_map(const YAML::Node& node, const std::string& field) {
  if (node && !node.IsNull() && !node.IsMap()) throw FieldError{field, "must be a map"};
}

std::string resolve_path(const std::string& path, const std::string& origin) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  if (path.rfind("~/", 0) == 0) {
    if (auto home = environment("HOME")) return (fs::path(*home) / path.substr(2)).string();
  }
  return (fs::path(origin).parent_path() / path).lexically_normal().string();
}

// Calls `each(index, name, body, field_prefix)` for every `- name: x\n  <body_key>: {...}` entry.
template <typename Each>
void for_each_named(const YAML::Node& root, const char* list_key, const char* body_key, Each each) {
  const YAML::Node list = root[list_key];
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) throw FieldError{list_key, "must be a list"};
  for (std::size_t index = 0; index < list.size(); ++index) {
    const YAML::Node entry = list[index];
    std::string field = std::string(list_key) + "[" + std::to_string(index) + "]";
    if (!entry.IsMap()) throw FieldError{field, "must be a map with name and " + std::string(body_key)};
    const std::string name = scalar(entry["name"], field + ".name");
    if (name.empty()) throw FieldError{field + ".name", "is missing"};
    field += " (name \"" + name + "\")." + body_key;
    const YAML::Node body = entry[body_key];
    require_map(body, field);
    each(name, body, field);
  }
}

ExecConfig parse_exec(const YAML::Node& node, const std::string& field, const std::string& origin) {
  ExecConfig exec;
  exec.command = scalar(node["command"], field + ".command");
  if (exec.command.empty()) throw FieldError{field + ".command", "is missing"};
  // A bare name is looked up in PATH; a relative path with a slash is relative to the kubeconfig.
  if (exec.command.find('/') != std::string::npos) exec.command = resolve_path(exec.command, origin);

  const YAML::Node args = node["args"];
  if (args && !args.IsNull()) {
    if (!args.IsSequence()) throw FieldError{field + ".args", "must be a list of strings"};
    for (std::size_t i = 0; i < args.size(); ++i)
      exec.args.push_back(scalar(args[i], field + ".args[" + std::to_string(i) + "]"));
  }
  const YAML::Node env = node["env"];
  if (env && !env.IsNull()) {
    if (!env.IsSequence()) throw FieldError{field + ".env", "must be a list of {name, value}"};
    for (std::size_t i = 0; i < env.size(); ++i) {
      const std::string entry_field = field + ".env[" + std::to_string(i) + "]";
      if (!env[i].IsMap()) throw FieldError{entry_field, "must be a map with name and value"};
      std::string name = scalar(env[i]["name"], entry_field + ".name");
      if (name.empty()) throw FieldError{entry_field + ".name", "is missing"};
      exec.env.emplace_back(std::move(name), scalar(env[i]["value"], entry_field + ".value"));
    }
  }
  exec.api_version = scalar(node["apiVersion"], field + ".apiVersion");
  if (exec.api_version.empty()) throw FieldError{field + ".apiVersion", "is missing"};
  if (exec.api_version != "client.authentication.k8s.io/v1" &&
      exec.api_version != "client.authentication.k8s.io/v1beta1")
    throw FieldError{field + ".apiVersion", "\"" + exec.api_version +
                                                "\" is not supported; use client.authentication.k8s.io/v1 "
                                                "(or v1beta1)"};
  exec.provide_cluster_info = boolean(node["provideClusterInfo"], field + ".provideClusterInfo");
  exec.install_hint = scalar(node["installHint"], field + ".installHint");
  const std::string mode = scalar(node["interactiveMode"], field + ".interactiveMode");
  if (!mode.empty()) {
    if (mode != "Never" && mode != "IfAvailable" && mode != "Always")
      throw FieldError{field + ".interactiveMode", "must be Never, IfAvailable or Always"};
    if (mode == "Always")
      throw FieldError{field + ".interactiveMode",
                       "is Always, but the operator never has a terminal: the plugin must work without one"};
    exec.interactive_mode = mode;
  }
  return exec;
}

Kubeconfig parse_document(const YAML::Node& root, const std::string& file) {
  Kubeconfig config;
  config.files.push_back(file);
  if (!root || root.IsNull()) return config;  // an empty file is a valid, empty kubeconfig
  if (!root.IsMap()) throw FieldError{"", "the document must be a map (apiVersion: v1, kind: Config)"};

  const std::string kind = scalar(root["kind"], "kind");
  if (!kind.empty() && kind != "Config") throw FieldError{"kind", "is \"" + kind + "\", expected Config"};
  config.current_context = scalar(root["current-context"], "current-context");

  for_each_named(root, "clusters", "cluster",
                 [&](const std::string& name, const YAML::Node& body, const std::string& field) {
                   Kubeconfig::Cluster cluster;
                   cluster.origin = file;
                   cluster.server = scalar(body["server"], field + ".server");
                   cluster.certificate_authority = resolve_path(
                       scalar(body["certificate-authority"], field + ".certificate-authority"), file);
                   cluster.certificate_authority_data = base64_field(body["certificate-authority-data"],
                                                                     field + ".certificate-authority-data");
                   cluster.tls_server_name = scalar(body["tls-server-name"], field + ".tls-server-name");
                   cluster.insecure_skip_tls_verify =
                       boolean(body["insecure-skip-tls-verify"], field + ".insecure-skip-tls-verify");
                   cluster.proxy_url = scalar(body["proxy-url"], field + ".proxy-url");
                   config.clusters.emplace(name, std::move(cluster));
                 });

  for_each_named(root, "users", "user",
                 [&](const std::string& name, const YAML::Node& body, const std::string& field) {
                   Kubeconfig::User user;
                   user.origin = file;
                   user.client_certificate =
                       resolve_path(scalar(body["client-certificate"], field + ".client-certificate"), file);
                   user.client_certificate_data =
                       base64_field(body["client-certificate-data"], field + ".client-certificate-data");
                   user.client_key = resolve_path(scalar(body["client-key"], field + ".client-key"), file);
                   user.client_key_data = base64_field(body["client-key-data"], field + ".client-key-data");
                   user.token = scalar(body["token"], field + ".token");
                   user.token_file = resolve_path(scalar(body["tokenFile"], field + ".tokenFile"), file);
                   user.username = scalar(body["username"], field + ".username");
                   if (body["exec"] && !body["exec"].IsNull()) {
                     require_map(body["exec"], field + ".exec");
                     user.exec = parse_exec(body["exec"], field + ".exec", file);
                   }
                   user.has_auth_provider = body["auth-provider"] && !body["auth-provider"].IsNull();
                   config.users.emplace(name, std::move(user));
                 });

  for_each_named(root, "contexts", "context",
                 [&](const std::string& name, const YAML::Node& body, const std::string& field) {
                   Kubeconfig::Context context;
                   context.origin = file;
                   context.cluster = scalar(body["cluster"], field + ".cluster");
                   context.user = scalar(body["user"], field + ".user");
                   context.namespace_name = scalar(body["namespace"], field + ".namespace");
                   config.contexts.emplace(name, std::move(context));
                 });
  return config;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string joined;
  for (const auto& part : parts) {
    if (!joined.empty()) joined += separator;
    joined += part;
  }
  return joined;
}

Result<std::string> read_referenced_file(const std::string& path, const std::string& origin,
                                         const std::string& field) {
  auto content = read_file(path);
  if (!content) return config_error(origin, field, content.error().message);
  return std::move(content).value();
}

bool looks_like_pem(std::string_view text, std::string_view label_suffix) {
  const auto begin = text.find("-----BEGIN ");
  if (begin == std::string_view::npos) return false;
  const auto end = text.find("-----", begin + 11);
  if (end == std::string_view::npos) return false;
  const std::string_view label = text.substr(begin + 11, end - begin - 11);
  return label.size() >= label_suffix.size() &&
         label.substr(label.size() - label_suffix.size()) == label_suffix;
}

}  // namespace

std::string server_url(std::string_view host, std::string_view port) {
  std::string url = "https://";
  if (host.find(':') != std::string_view::npos && host.front() != '[') {
    url += "[" + std::string(host) + "]";  // IPv6 literal
  } else {
    url += host;
  }
  if (!port.empty()) url += ":" + std::string(port);
  return url;
}

Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, const std::string& file) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return parse_document(root, file);
  } catch (const FieldError& error) {
    return config_error(file, error.field, error.problem);
  } catch (const YAML::Exception& error) {
    return config_error(
        file,
        "line " + std::to_string(error.mark.line + 1) + " column " + std::to_string(error.mark.column + 1),
        "not valid YAML: " + error.msg);
  }
}

Result<Kubeconfig> load_kubeconfig_files(const std::vector<std::string>& files) {
  Kubeconfig merged;
  std::set<std::string> seen;
  for (const auto& file : files) {
    if (file.empty() || !seen.insert(file).second) continue;
    std::error_code ignored;
    if (!fs::exists(file, ignored)) continue;  // client-go skips missing KUBECONFIG entries
    auto content = read_file(file);
    if (!content) return config_error(file, "", content.error().message);
    auto parsed = parse_kubeconfig(content.value(), file);
    if (!parsed) return std::move(parsed).error();
    Kubeconfig& one = parsed.value();
    // The first file to name a cluster, user or context wins; later files only add new names.
    for (auto& [name, cluster] : one.clusters) merged.clusters.try_emplace(name, std::move(cluster));
    for (auto& [name, user] : one.users) merged.users.try_emplace(name, std::move(user));
    for (auto& [name, context] : one.contexts) merged.contexts.try_emplace(name, std::move(context));
    if (merged.current_context.empty()) merged.current_context = one.current_context;
    merged.files.push_back(file);
  }
  return merged;
}

Result<ClientConfig> resolve_kubeconfig(const Kubeconfig& kubeconfig, const std::string& context_override) {
  const std::string files = kubeconfig.files.empty() ? std::string("(none)") : join(kubeconfig.files, ":");
  const std::string context_name = context_override.empty() ? kubeconfig.current_context : context_override;
  if (context_name.empty())
    return config_error(files, "current-context",
                        "is not set; set it (kubectl config use-context) or pass --context");
  const auto context_entry = kubeconfig.contexts.find(context_name);
  if (context_entry == kubeconfig.contexts.end()) {
    std::vector<std::string> names;
    for (const auto& [name, unused] : kubeconfig.contexts) names.push_back(name);
    return config_error(files, context_override.empty() ? "current-context" : "--context",
                        "context \"" + context_name + "\" does not exist (contexts: " +
                            (names.empty() ? std::string("none") : join(names, ", ")) + ")");
  }
  const Kubeconfig::Context& context = context_entry->second;
  const std::string context_field = "contexts[name=" + context_name + "]";

  const auto cluster_entry = kubeconfig.clusters.find(context.cluster);
  if (context.cluster.empty() || cluster_entry == kubeconfig.clusters.end())
    return config_error(context.origin, context_field + ".context.cluster",
                        "cluster \"" + context.cluster + "\" does not exist");
  const Kubeconfig::Cluster& cluster = cluster_entry->second;
  const std::string cluster_field = "clusters[name=" + context.cluster + "].cluster";

  ClientConfig config;
  config.context_name = context_name;
  config.source = "kubeconfig " + files + " context " + context_name;
  if (!context.namespace_name.empty()) config.namespace_name = context.namespace_name;

  config.server = cluster.server;
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  if (config.server.empty()) return config_error(cluster.origin, cluster_field + ".server", "is missing");
  if (config.server.rfind("https://", 0) != 0)
    return config_error(cluster.origin, cluster_field + ".server",
                        "\"" + cluster.server + "\" is not an https:// URL; the operator only talks TLS");
  if (!cluster.proxy_url.empty())
    return config_error(cluster.origin, cluster_field + ".proxy-url", "is not supported by this client");
  config.tls_server_name = cluster.tls_server_name;

  if (!cluster.certificate_authority.empty() && !cluster.certificate_authority_data.empty())
    return config_error(cluster.origin, cluster_field,
                        "certificate-authority and certificate-authority-data are both set; keep one");
  if (!cluster.certificate_authority_data.empty()) {
    config.ca_pem = cluster.certificate_authority_data;
    config.ca_origin = "kubeconfig " + cluster.origin + " " + cluster_field + ".certificate-authority-data";
  } else if (!cluster.certificate_authority.empty()) {
    auto ca = read_referenced_file(cluster.certificate_authority, cluster.origin,
                                   cluster_field + ".certificate-authority");
    if (!ca) return std::move(ca).error();
    config.ca_pem = std::move(ca).value();
    config.ca_origin = "certificate-authority " + cluster.certificate_authority;
  }
  if (!config.ca_pem.empty() && !looks_like_pem(config.ca_pem, "CERTIFICATE"))
    return config_error(
        cluster.origin,
        cluster_field + (cluster.certificate_authority_data.empty() ? ".certificate-authority"
                                                                    : ".certificate-authority-data"),
        "does not contain a PEM certificate (-----BEGIN CERTIFICATE-----)");
  // The operator always verifies the API server: it sends credentials and acts on what it reads.
  if (cluster.insecure_skip_tls_verify)
    return config_error(
        cluster.origin, cluster_field + ".insecure-skip-tls-verify",
        "is true: my-operator always verifies the API server's certificate and will not send "
        "credentials to a server it cannot verify. Remove insecure-skip-tls-verify and give the "
        "cluster its certificate-authority(-data) unless the system trust store holds it");

  const auto user_entry = kubeconfig.users.find(context.user);
  if (context.user.empty()) return config;  // anonymous: allowed, the server decides
  if (user_entry == kubeconfig.users.end())
    return config_error(context.origin, context_field + ".context.user",
                        "user \"" + context.user + "\" does not exist");
  const Kubeconfig::User& user = user_entry->second;
  const std::string user_field = "users[name=" + context.user + "].user";

  if (!user.username.empty())
    return config_error(
        user.origin, user_field + ".username",
        "basic authentication is not supported (the API server removed it); use a token, a client "
        "certificate or an exec plugin");
  if (user.has_auth_provider)
    return config_error(user.origin, user_field + ".auth-provider",
                        "auth-provider plugins are not supported; use an exec credential plugin instead "
                        "(e.g. kubelogin, gke-gcloud-auth-plugin)");

  if (!user.client_certificate.empty() && !user.client_certificate_data.empty())
    return config_error(user.origin, user_field,
                        "client-certificate and client-certificate-data are both set; keep one");
  if (!user.client_key.empty() && !user.client_key_data.empty())
    return config_error(user.origin, user_field, "client-key and client-key-data are both set; keep one");
  config.client_certificate_pem = user.client_certificate_data;
  if (!user.client_certificate.empty()) {
    auto certificate =
        read_referenced_file(user.client_certificate, user.origin, user_field + ".client-certificate");
    if (!certificate) return std::move(certificate).error();
    config.client_certificate_pem = std::move(certificate).value();
  }
  config.client_key_pem = user.client_key_data;
  if (!user.client_key.empty()) {
    auto key = read_referenced_file(user.client_key, user.origin, user_field + ".client-key");
    if (!key) return std::move(key).error();
    config.client_key_pem = std::move(key).value();
  }
  const std::string certificate_field =
      user_field + (user.client_certificate.empty() ? ".client-certificate-data" : ".client-certificate");
  const std::string key_field = user_field + (user.client_key.empty() ? ".client-key-data" : ".client-key");
  if (config.client_certificate_pem.empty() != config.client_key_pem.empty())
    return config_error(user.origin, config.client_key_pem.empty() ? key_field : certificate_field,
                        "is missing: a client certificate needs its key and the key its certificate");
  if (!config.client_certificate_pem.empty() && !looks_like_pem(config.client_certificate_pem, "CERTIFICATE"))
    return config_error(user.origin, certificate_field, "does not contain a PEM certificate");
  if (!config.client_key_pem.empty() && !looks_like_pem(config.client_key_pem, "PRIVATE KEY"))
    return config_error(user.origin, key_field, "does not contain a PEM private key");

  config.token = std::string(base::trim(user.token));
  if (config.token.empty()) config.token_file = user.token_file;
  config.exec = user.exec;
  if (config.exec && (!config.token.empty() || !config.token_file.empty()))
    return config_error(user.origin, user_field, "sets both a token (or tokenFile) and exec; keep one");
  return config;
}

Result<ClientConfig> in_cluster_config(const ConfigSearch& search) {
  const auto host = search.service_host ? search.service_host : environment("KUBERNETES_SERVICE_HOST");
  const auto port = search.service_port ? search.service_port : environment("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    return make_error(
        Reason::InvalidConfiguration,
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  const fs::path directory(search.service_account_dir);
  ClientConfig config;
  config.server = server_url(*host, *port);
  config.source = "in-cluster service account " + directory.string();
  config.token_file = (directory / "token").string();

  auto token = read_file(config.token_file);
  if (!token || base::trim(token.value()).empty())
    return make_error(
        Reason::InvalidConfiguration,
        "in-cluster: the service account token " + config.token_file +
            (token ? std::string(" is empty") : " cannot be read (" + token.error().message + ")") +
            "; is automountServiceAccountToken disabled for this pod?");
  auto ca = read_file((directory / "ca.crt").string());
  if (!ca)
    return make_error(Reason::InvalidConfiguration,
                      "in-cluster: the cluster CA cannot be read: " + ca.error().message);
  if (!looks_like_pem(ca.value(), "CERTIFICATE"))
    return make_error(Reason::InvalidConfiguration, "in-cluster: " + (directory / "ca.crt").string() +
                                                        " does not contain a PEM certificate");
  config.ca_pem = std::move(ca).value();
  config.ca_origin = (directory / "ca.crt").string();
  if (auto namespace_name = read_file((directory / "namespace").string()); namespace_name) {
    if (std::string trimmed(base::trim(namespace_name.value())); !trimmed.empty())
      config.namespace_name = trimmed;
  }
  return config;
}

Result<ClientConfig> load_client_config(const ConfigSearch& search) {
  auto resolve_files = [&](const std::vector<std::string>& files) -> Result<ClientConfig> {
    auto merged = load_kubeconfig_files(files);
    if (!merged) return std::move(merged).error();
    return resolve_kubeconfig(merged.value(), search.context);
  };

  if (!search.kubeconfig_path.empty()) {
    std::error_code ignored;
    if (!fs::exists(search.kubeconfig_path, ignored))
      return config_error(search.kubeconfig_path, "", "does not exist (given by --kubeconfig)");
    return resolve_files({search.kubeconfig_path});
  }

  const auto kubeconfig_env = search.kubeconfig_env ? search.kubeconfig_env : environment("KUBECONFIG");
  if (kubeconfig_env && !kubeconfig_env->empty()) {
    std::vector<std::string> files;
    std::stringstream list(*kubeconfig_env);
    for (std::string file; std::getline(list, file, ':');)
      if (!file.empty()) files.push_back(file);
    const bool any_exists = std::any_of(files.begin(), files.end(), [](const std::string& file) {
      std::error_code ignored;
      return fs::exists(file, ignored);
    });
    if (any_exists) return resolve_files(files);
    // Like client-go: KUBECONFIG replaces ~/.kube/config; with none of its files present only the
    // in-cluster configuration is left.
    auto in_cluster = in_cluster_config(search);
    if (in_cluster && search.context.empty()) return in_cluster;
    return make_error(Reason::InvalidConfiguration,
                      "none of the files in KUBECONFIG exist (" + *kubeconfig_env + ") and " +
                          (in_cluster ? std::string("--context cannot apply to the in-cluster configuration")
                                      : in_cluster.error().message));
  }

  const auto home = search.home ? search.home : environment("HOME");
  if (home && !home->empty()) {
    const fs::path default_file = fs::path(*home) / ".kube" / "config";
    std::error_code ignored;
    if (fs::exists(default_file, ignored)) return resolve_files({default_file.string()});
  }

  auto in_cluster = in_cluster_config(search);
  if (!in_cluster)
    return make_error(
        Reason::InvalidConfiguration,
        "no Kubernetes configuration found: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, "
        "or run in a pod (" +
            in_cluster.error().message + ")");
  if (!search.context.empty())
    return make_error(Reason::InvalidConfiguration,
                      "--context " + search.context + " was given but no kubeconfig file was found");
  return in_cluster;
}

}  // namespace myop::kube
