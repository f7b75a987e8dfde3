#pragma once
// What the Argo CD integration tests share: the Argo CD that hack/argocd-env started next to the
// control plane (its git repositories and Applications), and the operator running as the chart's
// ServiceAccount.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "myresource/operator_process.h"
#include "support/testenv.h"

namespace myop::argocd_testing {

using namespace std::chrono_literals;

// The Application the shipped ApplicationSet makes of tenants/team-a of the apps repository.
constexpr const char* kTenantApplication = "myresources-team-a";

inline std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const auto newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

// STATE/argocd/env of `hack/argocd-env up STATE` (KEY=value lines), STATE being the fixture's
// MYOP_TESTENV_STATE.
inline const std::map<std::string, std::string>& argocd_env() {
  static const std::map<std::string, std::string> values = [] {
    const char* state = std::getenv("MYOP_TESTENV_STATE");
    if (state == nullptr || *state == '\0') FAIL("MYOP_TESTENV_STATE is not set (run through ctest)");
    const std::string path = std::string(state) + "/argocd/env";
    std::ifstream file(path);
    if (!file) FAIL("no " << path << ": run hack/argocd-env up " << state << " first");
    std::map<std::string, std::string> read;
    for (std::string line; std::getline(file, line);)
      if (const auto equals = line.find('='); equals != std::string::npos)
        read[line.substr(0, equals)] = line.substr(equals + 1);
    return read;
  }();
  return values;
}

inline std::string env_value(const std::string& key) {
  const auto found = argocd_env().find(key);
  if (found == argocd_env().end()) FAIL("argocd-env's env file has no " << key);
  return found->second;
}

// `kubectl get application NAME -n argocd -o jsonpath=PATH`.
inline std::string application_field(const std::string& name, const std::string& path) {
  return testing::jsonpath("application", "argocd", name, path);
}

inline std::string sync_status(const std::string& application) {
  return application_field(application, "{.status.sync.status}");
}
inline std::string health_status(const std::string& application) {
  return application_field(application, "{.status.health.status}");
}
// The health Argo CD gives one resource of the Application by name (for a MyResource: the shipped
// Lua's verdict); "" while Argo CD lists no such resource.
inline std::string resource_health(const std::string& application, const std::string& name) {
  return application_field(application, "{.status.resources[?(@.name==\"" + name + "\")].health.status}");
}

inline bool synced_and_healthy(const std::string& application) {
  return sync_status(application) == "Synced" && health_status(application) == "Healthy";
}

inline std::string describe_application(const std::string& application) {
  return testenv::kubectl("get application " + application +
                          " -n argocd -o jsonpath='{.status.sync}{\"\\n\"}{.status.health}{\"\\n\"}"
                          "{.status.conditions}{\"\\n\"}{.status.operationState.message}{\"\\n\"}"
                          "{.status.resources}'")
      .output;
}

// Asks Argo CD to compare with Git now, as a repository webhook would after a push.
inline void refresh(const std::string& application) {
  testenv::kubectl("annotate application " + application +
                   " -n argocd --overwrite argocd.argoproj.io/refresh=normal");
}

// The apps repository (myorg/apps.git, served by git daemon): a clone, `script` run in it (it may
// commit itself, as git revert does), a commit of what is left, a push. Returns the new head.
inline std::string commit_to_apps(const std::string& message, const std::string& script) {
  const std::string command =
      "set -e; work=$(mktemp -d); trap 'rm -rf \"$work\"' EXIT; git clone -q " +
      shell_quoted(env_value("ARGOCD_ENV_APPS_REPOSITORY")) +
      " \"$work\"; cd \"$work\"; git config user.name test; git config user.email test@localhost; " + script +
      "; git add -A; git diff --cached --quiet || git commit -q -m " + shell_quoted(message) +
      "; git push -q origin HEAD:main; git rev-parse HEAD";
  const auto result = testenv::run("bash -c " + shell_quoted(command));
  INFO("commit '" << message << "': " << result.output);
  REQUIRE(result.ok());
  return last_line(result.output);
}

// Writes (or replaces) tenants/<namespace>/<file> and commits it.
inline std::string commit_file(const std::string& path, const std::string& content,
                               const std::string& message) {
  return commit_to_apps(message, "mkdir -p \"$(dirname " + shell_quoted(path) + ")\"; printf '%s' " +
                                     shell_quoted(content) + " > " + shell_quoted(path));
}

inline std::string current_revision(const std::string& application) {
  return application_field(application, "{.status.sync.revision}");
}

// The operator as the chart installs it: the built binary, started as a process (kwok cannot run
// its image), with a token of the chart's ServiceAccount, so it holds exactly the chart's RBAC.
inline std::string chart_service_account_kubeconfig() {
  const std::string token =
      last_line(testenv::kubectl_or_fail("create token my-operator -n my-operator-system --duration=2h"));
  const std::string path = testenv::binary_dir() + "/testenv/argocd-my-operator.kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""
                      << testenv::server_url() << "\", certificate-authority: \"" << testenv::ca_path()
                      << "\"}}]\nusers: [{name: u, user: {token: \"" << token
                      << "\"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n";
  return path;
}

// Waits until Argo CD has installed the chart: the operator's Application Synced and Healthy.
inline void wait_for_operator_application() {
  INFO(describe_application("my-operator"));
  REQUIRE(testing::eventually([] { return synced_and_healthy("my-operator"); }, 300s));
}

// The options of an operator process under the chart's ServiceAccount, which exists once Argo CD
// has installed the chart (waited for here).
inline testing::OperatorOptions chart_operator_options(const std::string& user) {
  wait_for_operator_application();
  return {.user = user,
          .namespaces = {},
          .pod_namespace = "my-operator-system",
          .extra_args = {},
          .kubeconfig = chart_service_account_kubeconfig()};
}

}  // namespace myop::argocd_testing
