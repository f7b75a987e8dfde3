// Where the API server is and how to prove who we are, found the way client-go finds it:
//   1. an explicit --kubeconfig file (it must exist),
//   2. else the files listed in $KUBECONFIG (':'-separated), merged with client-go's rules,
//   3. else ~/.kube/config when it exists,
//   4. else the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT and its token, ca.crt and
//      namespace files).
// Every problem names the file and the field, e.g.
//   "kubeconfig /home/a/.kube/config: users[0] (name \"admin\").user.client-key-data: not valid base64".
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/errors.h"

namespace myop::kube {

// users[].user.exec: a credential plugin speaking client.authentication.k8s.io ExecCredential.
struct ExecConfig {
  std::string command;  // resolved against the kubeconfig's directory when it is a relative path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version = "client.authentication.k8s.io/v1";
  bool provide_cluster_info = false;
  std::string install_hint;
  std::string interactive_mode = "IfAvailable";  // we never have a terminal: Always is refused
};

// One kubeconfig after merging; entries keep the file they came from so errors can name it.
struct Kubeconfig {
  struct Cluster {
    std::string server;
    std::string certificate_authority;       // path, resolved against `origin`'s directory
    std::string certificate_authority_data;  // PEM (already base64-decoded)
    std::string tls_server_name;
    bool insecure_skip_tls_verify = false;  // read only to refuse it: the server is always verified
    std::string proxy_url;
    std::string origin;  // file this entry came from
  };
  struct User {
    std::string client_certificate;       // path
    std::string client_certificate_data;  // PEM
    std::string client_key;               // path
    std::string client_key_data;          // PEM
    std::string token;
    std::string token_file;  // path
    std::string username;    // basic auth is refused: the API server removed it in 1.19
    std::optional<ExecConfig> exec;
    bool has_auth_provider = false;  // legacy gcp/azure/oidc auth-provider: refused with advice
    std::string origin;
  };
  struct Context {
    std::string cluster;
    std::string user;
    std::string namespace_name;
    std::string origin;
  };

  std::map<std::string, Cluster> clusters;
  std::map<std::string, User> users;
  std::map<std::string, Context> contexts;
  std::string current_context;
  std::vector<std::string> files;  // every file that contributed, in precedence order
};

// Parse one kubeconfig document. `file` is used in messages and to resolve relative paths.
Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, const std::string& file);

// Read and merge several files with client-go's rules: the first file to define a cluster, user or
// context name wins; the first non-empty current-context wins; missing files are skipped (a file that
// exists but cannot be parsed is an error); duplicates are read once.
Result<Kubeconfig> load_kubeconfig_files(const std::vector<std::string>& files);

// Everything the transport needs, resolved and with every file read (except the token file, which is
// re-read while running).
struct ClientConfig {
  std::string server;           // https://host:port, IPv6 hosts in brackets
  std::string tls_server_name;  // SNI and certificate name when it differs from the server's host
  std::string ca_pem;           // empty: the system trust store (only when no CA is configured)
  std::string ca_origin;        // "certificate-authority /path" or "certificate-authority-data" (messages)
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;
  std::optional<ExecConfig> exec;
  std::string namespace_name = "default";  // the context's namespace, or the pod's namespace in-cluster
  std::string context_name;
  std::string source;  // "kubeconfig /a:/b context x" or "in-cluster": says where this came from
};

// Inputs of the search. Defaults read the real environment; tests override every field.
struct ConfigSearch {
  std::string kubeconfig_path;                // --kubeconfig
  std::string context;                        // --context
  std::optional<std::string> kubeconfig_env;  // $KUBECONFIG; nullopt = read the environment
  std::optional<std::string> home;            // $HOME; nullopt = read the environment
  std::optional<std::string> service_host;    // $KUBERNETES_SERVICE_HOST; nullopt = environment
  std::optional<std::string> service_port;    // $KUBERNETES_SERVICE_PORT; nullopt = environment
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// The whole search described at the top of this file.
Result<ClientConfig> load_client_config(const ConfigSearch& search = {});

// Resolve a (merged) kubeconfig into a ClientConfig for `context` (empty: current-context).
Result<ClientConfig> resolve_kubeconfig(const Kubeconfig& kubeconfig, const std::string& context);

// The in-cluster service account alone.
Result<ClientConfig> in_cluster_config(const ConfigSearch& search = {});

// "https://10.0.0.1:443" or "https://[fd00::1]:443".
std::string server_url(std::string_view host, std::string_view port);

}  // namespace myop::kube
