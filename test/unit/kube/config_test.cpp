#include "kube/config.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace fs = std::filesystem;
using myop::kube::ConfigSearch;
using myop::kube::Reason;

namespace {

// PEM-shaped text: config loading checks the shape, the transport checks the content.
const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const std::string kKeyPem = "-----BEGIN EC PRIVATE KEY-----\nMHcfake\n-----END EC PRIVATE KEY-----\n";

std::string base64(const std::string& data) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) | static_cast<unsigned char>(data[i + 2]);
    out += {alphabet[(n >> 18) & 63], alphabet[(n >> 12) & 63], alphabet[(n >> 6) & 63], alphabet[n & 63]};
  }
  if (i < data.size()) {
    unsigned n = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) n |= static_cast<unsigned char>(data[i + 1]) << 8;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += (i + 1 < data.size()) ? alphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() / ("myop-config-test-" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path file = path_ / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file.string();
  }
  std::string path(const std::string& name = "") const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// A search that sees nothing of the real environment.
ConfigSearch isolated(const TempDir& dir) {
  ConfigSearch search;
  search.kubeconfig_env = "";
  search.home = dir.path("home");
  search.service_host = "";
  search.service_port = "";
  search.service_account_dir = dir.path("serviceaccount");
  return search;
}

std::string token_kubeconfig(const std::string& context, const std::string& server,
                             const std::string& token) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + context + "\nclusters:\n- name: " + context +
         "-cluster\n  cluster:\n    server: " + server +
         "\n    certificate-authority-data: " + base64(kCaPem) + "\nusers:\n- name: " + context +
         "-user\n  user:\n    token: " + token + "\ncontexts:\n- name: " + context +
         "\n  context:\n    cluster: " + context + "-cluster\n    user: " + context +
         "-user\n    namespace: ns-" + context + "\n";
}

}  // namespace

TEST_CASE("a kubeconfig with certificate data, client certificate data and a context resolves",
          "[kube][config]") {
  TempDir dir;
  const std::string file = dir.write("config",
                                     "apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters:\n"
                                     "- name: c\n  cluster:\n    server: https://10.0.0.1:6443/\n"
                                     "    certificate-authority-data: " +
                                         base64(kCaPem) +
                                         "\n"
                                         "    tls-server-name: kubernetes.default.svc\n"
                                         "users:\n- name: u\n  user:\n"
                                         "    client-certificate-data: " +
                                         base64(kCaPem) +
                                         "\n"
                                         "    client-key-data: " +
                                         base64(kKeyPem) +
                                         "\n"
                                         "contexts:\n- name: dev\n  context:\n    cluster: c\n    user: u\n"
                                         "    namespace: team-a\n");
  auto search = isolated(dir);
  search.kubeconfig_path = file;
  auto config = myop::kube::load_client_config(search);
  REQUIRE(config.ok());
  CHECK(config->server == "https://10.0.0.1:6443");
  CHECK(config->ca_pem == kCaPem);
  CHECK(config->tls_server_name == "kubernetes.default.svc");
  CHECK(config->client_certificate_pem == kCaPem);
  CHECK(config->client_key_pem == kKeyPem);
  CHECK(config->namespace_name == "team-a");
  CHECK(config->context_name == "dev");
  CHECK(config->source.find(file) != std::string::npos);
}

TEST_CASE("certificate and key files are read relative to the kubeconfig's directory", "[kube][config]") {
  TempDir dir;
  dir.write("sub/ca.crt", kCaPem);
  dir.write("sub/client.crt", kCaPem);
  dir.write("sub/client.key", kKeyPem);
  dir.write("sub/token", "  file-token \n");
  const std::string file = dir.write("sub/config",
                                     "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
                                     "    certificate-authority: ca.crt\n"
                                     "users:\n- name: u\n  user:\n    client-certificate: client.crt\n"
                                     "    client-key: client.key\n    tokenFile: token\n"
                                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                                     "current-context: x\n");
  auto search = isolated(dir);
  search.kubeconfig_path = file;
  auto config = myop::kube::load_client_config(search);
  REQUIRE(config.ok());
  CHECK(config->ca_pem == kCaPem);
  CHECK(config->client_key_pem == kKeyPem);
  CHECK(config->token_file == dir.path("sub/token"));
  CHECK(config->namespace_name == "default");
}

TEST_CASE("KUBECONFIG files merge with client-go's first-wins rules", "[kube][config]") {
  TempDir dir;
  // first.yaml defines context "a" and sets no current-context; second.yaml redefines "a" (ignored),
  // adds "b" and sets current-context b.
  std::string first = token_kubeconfig("a", "https://first:1", "token-a-first");
  first.replace(first.find("current-context: a\n"), std::string("current-context: a\n").size(), "");
  const std::string first_file = dir.write("first.yaml", first);
  std::string second =
      token_kubeconfig("a", "https://second:1", "token-a-second") + "";  // context a again, then b below
  const std::string second_file = dir.write("second.yaml", second);
  const std::string third_file = dir.write("third.yaml", token_kubeconfig("b", "https://third:1", "token-b"));

  auto search = isolated(dir);
  search.kubeconfig_env = first_file + ":" + dir.path("missing.yaml") + ":" + second_file + "::" + third_file;
  SECTION(
      "current-context comes from the first file that sets one, entries from the first file that names "
      "them") {
    auto config = myop::kube::load_client_config(search);
    REQUIRE(config.ok());
    CHECK(config->context_name == "a");  // second.yaml sets current-context a first
    CHECK(config->server == "https://first:1");
    CHECK(config->token == "token-a-first");
    CHECK(config->namespace_name == "ns-a");
  }
  SECTION("a context override picks an entry from a later file") {
    search.context = "b";
    auto config = myop::kube::load_client_config(search);
    REQUIRE(config.ok());
    CHECK(config->server == "https://third:1");
    CHECK(config->token == "token-b");
  }
  SECTION("an unknown context override is an error listing the known ones") {
    search.context = "nope";
    auto config = myop::kube::load_client_config(search);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().reason == Reason::InvalidConfiguration);
    CHECK(config.error().message.find("\"nope\" does not exist") != std::string::npos);
    CHECK(config.error().message.find("a, b") != std::string::npos);
  }
}

TEST_CASE("the search order is --kubeconfig, KUBECONFIG, ~/.kube/config, in-cluster", "[kube][config]") {
  TempDir dir;
  const std::string explicit_file = dir.write("explicit", token_kubeconfig("e", "https://explicit:1", "t"));
  const std::string env_file = dir.write("env", token_kubeconfig("v", "https://env:1", "t"));
  dir.write("home/.kube/config", token_kubeconfig("h", "https://home:1", "t"));
  dir.write("serviceaccount/token", "sa-token\n");
  dir.write("serviceaccount/ca.crt", kCaPem);
  dir.write("serviceaccount/namespace", "operators\n");
  auto search = isolated(dir);
  search.service_host = "10.96.0.1";
  search.service_port = "443";

  auto server_of = [](const ConfigSearch& s) {
    auto config = myop::kube::load_client_config(s);
    REQUIRE(config.ok());
    return config->server;
  };
  CHECK(server_of(search) == "https://home:1");
  search.kubeconfig_env = env_file;
  CHECK(server_of(search) == "https://env:1");
  search.kubeconfig_path = explicit_file;
  CHECK(server_of(search) == "https://explicit:1");

  SECTION("without any kubeconfig the service account is used") {
    auto in_cluster_search = isolated(dir);
    in_cluster_search.home = dir.path("nohome");
    in_cluster_search.service_host = "10.96.0.1";
    in_cluster_search.service_port = "443";
    auto config = myop::kube::load_client_config(in_cluster_search);
    REQUIRE(config.ok());
    CHECK(config->server == "https://10.96.0.1:443");
    CHECK(config->token_file == dir.path("serviceaccount/token"));
    CHECK(config->ca_pem == kCaPem);
    CHECK(config->namespace_name == "operators");
    CHECK(config->source.rfind("in-cluster", 0) == 0);
  }
  SECTION("an explicit --kubeconfig that does not exist is an error, not a fallback") {
    search.kubeconfig_path = dir.path("does-not-exist");
    auto config = myop::kube::load_client_config(search);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().message.find(dir.path("does-not-exist")) != std::string::npos);
    CHECK(config.error().message.find("--kubeconfig") != std::string::npos);
  }
  SECTION("KUBECONFIG naming only missing files falls back to in-cluster, not to ~/.kube/config") {
    search.kubeconfig_path.clear();
    search.kubeconfig_env = dir.path("gone1") + ":" + dir.path("gone2");
    CHECK(server_of(search) == "https://10.96.0.1:443");
  }
}

TEST_CASE("in-cluster configuration handles IPv6 and missing pieces", "[kube][config]") {
  TempDir dir;
  dir.write("serviceaccount/token", "sa-token\n");
  dir.write("serviceaccount/ca.crt", kCaPem);
  auto search = isolated(dir);
  search.service_host = "fd00:10:96::1";
  search.service_port = "443";
  auto config = myop::kube::in_cluster_config(search);
  REQUIRE(config.ok());
  CHECK(config->server == "https://[fd00:10:96::1]:443");
  CHECK(config->namespace_name == "default");  // no namespace file

  SECTION("no service variables") {
    search.service_host = "";
    auto missing = myop::kube::in_cluster_config(search);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
  }
  SECTION("no token file") {
    fs::remove(dir.path("serviceaccount/token"));
    auto missing = myop::kube::in_cluster_config(search);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find(dir.path("serviceaccount/token")) != std::string::npos);
  }
  SECTION("a CA file that is not PEM") {
    dir.write("serviceaccount/ca.crt", "garbage");
    auto bad = myop::kube::in_cluster_config(search);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("ca.crt") != std::string::npos);
  }
}

TEST_CASE("server_url brackets IPv6 literals only", "[kube][config]") {
  CHECK(myop::kube::server_url("10.0.0.1", "443") == "https://10.0.0.1:443");
  CHECK(myop::kube::server_url("::1", "6443") == "https://[::1]:6443");
  CHECK(myop::kube::server_url("[::1]", "6443") == "https://[::1]:6443");
  CHECK(myop::kube::server_url("kubernetes.default.svc", "443") == "https://kubernetes.default.svc:443");
}

TEST_CASE("exec plugin configuration is parsed", "[kube][config]") {
  TempDir dir;
  const std::string file = dir.write(
      "config",
      "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
      "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
      "      command: ./bin/plugin\n      args: [get-token, --cluster, c]\n"
      "      env:\n      - name: AWS_PROFILE\n        value: prod\n"
      "      provideClusterInfo: true\n      installHint: install the plugin\n      interactiveMode: Never\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  auto search = isolated(dir);
  search.kubeconfig_path = file;
  auto config = myop::kube::load_client_config(search);
  REQUIRE(config.ok());
  REQUIRE(config->exec.has_value());
  CHECK(config->exec->command == dir.path("bin/plugin"));
  CHECK(config->exec->args == std::vector<std::string>{"get-token", "--cluster", "c"});
  REQUIRE(config->exec->env.size() == 1);
  CHECK(config->exec->env[0].first == "AWS_PROFILE");
  CHECK(config->exec->env[0].second == "prod");
  CHECK(config->exec->provide_cluster_info);
  CHECK(config->exec->interactive_mode == "Never");
  CHECK(config->ca_pem.empty());  // no CA configured: the system trust store will be used
}

TEST_CASE("a bare exec command name is looked up in PATH, not next to the kubeconfig", "[kube][config]") {
  auto parsed = myop::kube::parse_kubeconfig(
      "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
      "      command: aws\n",
      "/etc/kube/config");
  REQUIRE(parsed.ok());
  CHECK(parsed->users.at("u").exec->command == "aws");
}

TEST_CASE("insecure-skip-tls-verify is always refused: the API server is always verified", "[kube][config]") {
  TempDir dir;
  const std::string file = dir.write("config",
                                     "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
                                     "    insecure-skip-tls-verify: true\n"
                                     "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
  auto search = isolated(dir);
  search.kubeconfig_path = file;
  auto refused = myop::kube::load_client_config(search);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().reason == Reason::InvalidConfiguration);
  CHECK(refused.error().message.find(file) != std::string::npos);
  CHECK(refused.error().message.find("insecure-skip-tls-verify") != std::string::npos);
  // It says what to do instead, and offers no way around the verification.
  CHECK(refused.error().message.find("certificate-authority") != std::string::npos);
  CHECK(refused.error().message.find("-allowed") == std::string::npos);
}

// Each malformed input must name the file and the field that is wrong.
TEST_CASE("malformed kubeconfigs name the file and the field", "[kube][config]") {
  struct Case {
    const char* description;
    std::string yaml;
    std::string field;
    std::string problem;
  };
  const std::string cluster = "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n";
  const std::string context = "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  const std::vector<Case> cases{
      {"not YAML", "clusters: [\n", "line", "not valid YAML"},
      {"top level is a list", "- a\n- b\n", "", "must be a map"},
      {"clusters is a map", "clusters:\n  c: {}\n", "clusters", "must be a list"},
      {"cluster without name", "clusters:\n- cluster: {server: https://h:1}\n", "clusters[0].name",
       "is missing"},
      {"server is a list", "clusters:\n- name: c\n  cluster:\n    server: [a]\n",
       "clusters[0] (name \"c\").cluster.server", "must be a string"},
      {"bad base64", "clusters:\n- name: c\n  cluster:\n    certificate-authority-data: '!!notbase64'\n",
       "clusters[0] (name \"c\").cluster.certificate-authority-data", "not valid base64"},
      {"insecure flag not boolean", "clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: maybe\n",
       "clusters[0] (name \"c\").cluster.insecure-skip-tls-verify", "true or false"},
      {"bad client key data", cluster + "users:\n- name: u\n  user:\n    client-key-data: '%%%'\n" + context,
       "users[0] (name \"u\").user.client-key-data", "not valid base64"},
      {"exec without apiVersion", "users:\n- name: u\n  user:\n    exec:\n      command: x\n",
       "users[0] (name \"u\").user.exec.apiVersion", "is missing"},
      {"exec with removed v1alpha1",
       "users:\n- name: u\n  user:\n    exec:\n      command: x\n      apiVersion: "
       "client.authentication.k8s.io/v1alpha1\n",
       "users[0] (name \"u\").user.exec.apiVersion", "not supported"},
      {"exec args not a list",
       "users:\n- name: u\n  user:\n    exec:\n      command: x\n      apiVersion: "
       "client.authentication.k8s.io/v1\n"
       "      args: abc\n",
       "users[0] (name \"u\").user.exec.args", "must be a list"},
      {"exec env entry without name",
       "users:\n- name: u\n  user:\n    exec:\n      command: x\n      apiVersion: "
       "client.authentication.k8s.io/v1\n"
       "      env:\n      - value: y\n",
       "users[0] (name \"u\").user.exec.env[0].name", "is missing"},
      {"exec interactive Always",
       "users:\n- name: u\n  user:\n    exec:\n      command: x\n      apiVersion: "
       "client.authentication.k8s.io/v1\n"
       "      interactiveMode: Always\n",
       "users[0] (name \"u\").user.exec.interactiveMode", "terminal"},
      {"context missing its body", "contexts:\n- name: x\n  context: 5\n", "contexts[0] (name \"x\").context",
       "must be a map"},
      {"kind is not Config", "kind: Pod\n", "kind", "expected Config"},
  };
  for (const auto& test : cases) {
    DYNAMIC_SECTION(test.description) {
      auto parsed = myop::kube::parse_kubeconfig(test.yaml, "/tmp/broken-kubeconfig");
      REQUIRE_FALSE(parsed.ok());
      const std::string& message = parsed.error().message;
      INFO(message);
      CHECK(parsed.error().reason == Reason::InvalidConfiguration);
      CHECK(message.find("/tmp/broken-kubeconfig") != std::string::npos);
      CHECK(message.find(test.field) != std::string::npos);
      CHECK(message.find(test.problem) != std::string::npos);
    }
  }
}

TEST_CASE("resolution problems name the file and the field", "[kube][config]") {
  TempDir dir;
  auto resolve_error = [&](const std::string& yaml) {
    const std::string file = dir.write("config", yaml);
    auto search = isolated(dir);
    search.kubeconfig_path = file;
    auto config = myop::kube::load_client_config(search);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().message.find(file) != std::string::npos);
    return config.error().message;
  };
  const std::string cluster = "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n";
  const std::string context = "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";

  CHECK(resolve_error(cluster + "contexts:\n- name: x\n  context: {cluster: c}\n").find("current-context") !=
        std::string::npos);
  CHECK(resolve_error("contexts:\n- name: x\n  context: {cluster: nope}\ncurrent-context: x\n")
            .find("contexts[name=x].context.cluster: cluster \"nope\" does not exist") != std::string::npos);
  CHECK(resolve_error(cluster + context).find("contexts[name=x].context.user: user \"u\" does not exist") !=
        std::string::npos);
  CHECK(resolve_error("clusters:\n- name: c\n  cluster:\n    server: http://h:1\n" + context)
            .find("clusters[name=c].cluster.server") != std::string::npos);
  CHECK(resolve_error("clusters:\n- name: c\n  cluster: {}\n" + context)
            .find("clusters[name=c].cluster.server: is missing") != std::string::npos);
  CHECK(resolve_error("clusters:\n- name: c\n  cluster:\n    server: https://h:1\n    certificate-authority: "
                      "/nonexistent/ca.crt\n" +
                      context)
            .find("clusters[name=c].cluster.certificate-authority: cannot read /nonexistent/ca.crt") !=
        std::string::npos);
  CHECK(resolve_error(
            "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n    certificate-authority-data: " +
            base64("not a pem") + "\n" + context)
            .find("certificate-authority-data: does not contain a PEM certificate") != std::string::npos);
  CHECK(resolve_error(cluster + "users:\n- name: u\n  user:\n    client-certificate-data: " + base64(kCaPem) +
                      "\n" + context)
            .find("users[name=u].user.client-key-data: is missing") != std::string::npos);
  CHECK(resolve_error(cluster + "users:\n- name: u\n  user:\n    client-certificate-data: " + base64(kCaPem) +
                      "\n    client-key-data: " + base64(kCaPem) + "\n" + context)
            .find("client-key-data: does not contain a PEM private key") != std::string::npos);
  CHECK(
      resolve_error(cluster + "users:\n- name: u\n  user:\n    username: admin\n    password: x\n" + context)
          .find("users[name=u].user.username: basic authentication is not supported") != std::string::npos);
  CHECK(
      resolve_error(cluster + "users:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n" + context)
          .find("auth-provider") != std::string::npos);
}

TEST_CASE("a file in KUBECONFIG that exists but is broken stops the search", "[kube][config]") {
  TempDir dir;
  const std::string good = dir.write("good", token_kubeconfig("a", "https://a:1", "t"));
  const std::string bad = dir.write("bad", "clusters: {\n");
  auto search = isolated(dir);
  search.kubeconfig_env = good + ":" + bad;
  auto config = myop::kube::load_client_config(search);
  REQUIRE_FALSE(config.ok());
  CHECK(config.error().message.find(bad) != std::string::npos);
}

TEST_CASE("an empty kubeconfig is valid but has no context", "[kube][config]") {
  auto parsed = myop::kube::parse_kubeconfig("", "/x");
  REQUIRE(parsed.ok());
  auto resolved = myop::kube::resolve_kubeconfig(parsed.value(), "");
  REQUIRE_FALSE(resolved.ok());
  CHECK(resolved.error().message.find("current-context") != std::string::npos);
}
