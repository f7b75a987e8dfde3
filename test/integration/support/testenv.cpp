#include "support/testenv.h"

#include <rapidjson/document.h>
#include <catch2/catch.hpp>

#include "base/base64.h"

#include <sys/wait.h>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>

namespace myop::testenv {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

std::string testenv_state() {
  const char* state = std::getenv("MYOP_TESTENV_STATE");
  return state ? state : "";
}

std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string testenv_command(const std::string& arguments) {
  return source_dir() + "/hack/testenv " + arguments + " --dir " + quote(state_dir());
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string join_groups(const std::vector<std::string>& groups) {
  std::string joined;
  for (const auto& group : groups) joined += " " + quote(group);
  return joined;
}

}  // namespace

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    result.output = "popen failed for: " + command;
    return result;
  }
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string kubeconfig_path() {
  const std::string state = testenv_state();
  if (!state.empty()) {
    std::string path = read_first_line(state + "/kubeconfig-path");
    if (!path.empty()) return path;
    FAIL("no control plane: " << state
                              << "/kubeconfig-path is missing; run the integration tests through ctest "
                                 "(its controlplane fixture starts one) or set KUBECONFIG");
  }
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig && *kubeconfig) return kubeconfig;
  FAIL("no control plane: run the integration tests through ctest, or set KUBECONFIG");
  return {};
}

CommandResult kubectl(const std::string& args) {
  return run("kubectl --kubeconfig " + quote(kubeconfig_path()) + " " + args);
}

std::string kubectl_or_fail(const std::string& args) {
  CommandResult result = kubectl(args);
  if (!result.ok()) FAIL("kubectl " << args << " failed (" << result.exit_code << "): " << result.output);
  return result.output;
}

CommandResult kubectl_apply(const std::string& manifest, const std::string& extra_args) {
  const std::string file = binary_dir() + "/testenv/manifest-" + std::to_string(::getpid()) + "-" +
                           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                           ".yaml";
  { std::ofstream(file) << manifest; }
  CommandResult result = kubectl("apply -f " + quote(file) + " " + extra_args);
  std::remove(file.c_str());
  return result;
}

ScopedNamespace::ScopedNamespace(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto stamp = std::chrono::system_clock::now().time_since_epoch().count() % 1000000007;
  name_ = prefix + "-" + std::to_string(stamp % 100000) + "-" + std::to_string(counter++);
  kubectl_or_fail("create namespace " + name_);
  // The namespace's default ServiceAccount is created by the controller manager.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (kubectl("get serviceaccount default -n " + name_).ok()) break;
    run("sleep 0.1");
  }
}

ScopedNamespace::~ScopedNamespace() { kubectl("delete namespace " + name_ + " --wait=false"); }

bool owns_control_plane() {
  const std::string state = testenv_state();
  return !state.empty() && !read_first_line(state + "/controlplane-dir").empty();
}

std::string state_dir() {
  if (!owns_control_plane())
    FAIL(
        "this test stops or inspects control-plane processes, so it needs the control plane the ctest "
        "fixture starts (unset KUBECONFIG)");
  return read_first_line(testenv_state() + "/controlplane-dir");
}

std::string ca_path() { return state_dir() + "/pki/ca.crt"; }

std::string crd_manifest() {
  const std::string path = testenv_state() + "/webhook/myorg.io_myresources.yaml";
  if (testenv_state().empty() || !std::ifstream(path))
    FAIL("no " << path << ": hack/test-fixture.sh up writes it (MYOP_TESTENV_STATE names its state)");
  return path;
}

std::string webhook_url() {
  crd_manifest();
  return read_first_line(testenv_state() + "/webhook/url");
}

std::string webhook_ca_path() {
  crd_manifest();
  return testenv_state() + "/webhook/ca.crt";
}

std::string webhook_ca_bundle() { return base::encode_base64(read_file(webhook_ca_path())); }

void apply_crd() {
  kubectl_or_fail("apply --server-side --force-conflicts -f " + quote(crd_manifest()) + " -f " +
                  quote(source_dir() + "/config/crd/myresources-annotations-policy.yaml"));
  kubectl_or_fail("wait --for=condition=Established crd/myresources.myorg.io --timeout=60s");
}

std::string server_url() {
  return trim(kubectl_or_fail("config view --minify -o jsonpath='{.clusters[0].cluster.server}'"));
}

static void component_action(const std::string& action, const std::string& component) {
  CommandResult result = run(testenv_command(action + " " + component));
  if (!result.ok()) FAIL("hack/testenv " << action << " " << component << " failed: " << result.output);
}

void stop_component(const std::string& component) { component_action("stop", component); }
void start_component(const std::string& component) { component_action("start", component); }
void restart_component(const std::string& component) { component_action("restart", component); }

ComponentStopped::ComponentStopped(std::string component) : component_(std::move(component)) {
  stop_component(component_);
}

ComponentStopped::~ComponentStopped() {
  if (std::uncaught_exceptions() == 0) {
    start_component(component_);
  } else {  // unwinding: no FAIL here
    run(testenv_command("start " + component_));
  }
}

long long compact_etcd() {
  CommandResult result = run(testenv_command("compact"));
  if (!result.ok()) FAIL("hack/testenv compact failed: " << result.output);
  return std::stoll(trim(result.output));
}

std::vector<std::pair<std::string, std::string>> etcd_values(const std::string& prefix) {
  CommandResult result = run(testenv_command("etcd-get " + quote(prefix)));
  if (!result.ok()) FAIL("hack/testenv etcd-get failed: " << result.output);
  std::vector<std::pair<std::string, std::string>> values;
  std::istringstream lines(result.output);
  std::string line;
  while (std::getline(lines, line)) {
    rapidjson::Document entry;
    if (entry.Parse(line.c_str()).HasParseError() || !entry.IsObject() || !entry.HasMember("key") ||
        !entry.HasMember("value"))
      FAIL("hack/testenv etcd-get printed an unexpected line: " << line);
    values.emplace_back(entry["key"].GetString(), entry["value"].GetString());
  }
  return values;
}

ClientCertificate issue_client_certificate(const std::string& user, const std::vector<std::string>& groups) {
  CommandResult result = run(testenv_command("issue-cert " + quote(user) + join_groups(groups)));
  if (!result.ok()) FAIL("hack/testenv issue-cert failed: " << result.output);
  std::istringstream paths(trim(result.output));
  ClientCertificate certificate;
  paths >> certificate.certificate_path >> certificate.key_path;
  return certificate;
}

std::string kubeconfig_for_user(const std::string& user, const std::vector<std::string>& groups) {
  CommandResult result = run(testenv_command("kubeconfig-for " + quote(user) + join_groups(groups)));
  if (!result.ok()) FAIL("hack/testenv kubeconfig-for failed: " << result.output);
  return trim(result.output);
}

std::string kubeconfig_with_server(const std::string& kubeconfig, const std::string& server) {
  std::ifstream file(kubeconfig);
  if (!file) FAIL("cannot read " << kubeconfig);
  std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const std::string original = server_url();
  std::size_t replaced = 0;
  for (auto at = text.find(original); at != std::string::npos; at = text.find(original, at + server.size())) {
    text.replace(at, original.size(), server);
    ++replaced;
  }
  if (replaced == 0) FAIL(kubeconfig << " does not name the API server " << original);
  std::string port = server.substr(server.find_last_of(':') + 1);
  const std::string path = kubeconfig + ".via-" + port;
  std::ofstream(path) << text;
  return path;
}

std::string audit_log_path() { return state_dir() + "/audit.log"; }

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) FAIL("cannot read " << path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string source_dir() { return MYOP_SOURCE_DIR; }
std::string binary_dir() { return MYOP_BINARY_DIR; }

std::string tool_binary(const std::string& tool, const std::string& program) {
  const auto result = run(source_dir() + "/hack/build-tools.sh --print-bin-dir " + tool);
  if (!result.ok()) FAIL("hack/build-tools.sh --print-bin-dir " << tool << " failed:\n" << result.output);
  // The folder is the last line: progress of a first build comes before it.
  std::string output = result.output;
  while (!output.empty() && std::isspace(static_cast<unsigned char>(output.back()))) output.pop_back();
  return output.substr(output.find_last_of('\n') + 1) + "/" + program;
}

}  // namespace myop::testenv
