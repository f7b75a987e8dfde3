// The chart's namespaced mode (watchNamespaces): the operator gets the manager rules only as a
// Role in each listed namespace, no cluster-wide read of Deployments or MyResources, and still
// works: run out of cluster with the chart's ServiceAccount token and the chart's own
// arguments, it reconciles a MyResource in a listed namespace to Ready, never touches one in
// another namespace, and the API server's audit log shows no denied and no cluster-wide request.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>
#include <fstream>
#include <thread>

#include "myresource/operator_process.h"
#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

bool can(const std::string& who, const std::string& request) {
  const std::string output = trimmed(testenv::kubectl("auth can-i " + request + " " + who).output);
  return output.substr(output.find_last_of('\n') + 1) == "yes";
}

// The operator container's arguments in the installed Deployment, less what OperatorProcess sets
// itself (loopback bind addresses, text logs). The webhook serves on a loopback port of the kernel's
// choice and leaves the CRD's caBundle alone: the CRD names the fixture's webhook (its CA), not this
// operator's.
std::vector<std::string> chart_arguments(const std::string& deployment, const std::string& namespace_) {
  const std::string json =
      trimmed(testenv::kubectl_or_fail("get deployment " + deployment + " -n " + namespace_ +
                                       " -o jsonpath='{.spec.template.spec.containers[0].args}'"));
  rapidjson::Document args;
  const std::string array = json.substr(json.find('['));
  if (args.Parse(array.c_str()).HasParseError() || !args.IsArray()) FAIL("unexpected args: " << json);
  std::vector<std::string> kept;
  for (const auto& arg : args.GetArray()) {
    const std::string text = arg.GetString();
    if (text.rfind("--metrics-bind-address", 0) == 0 || text.rfind("--health-probe-bind-address", 0) == 0 ||
        text.rfind("--log-format", 0) == 0 || text.rfind("--webhook-crds", 0) == 0)
      continue;
    if (text.rfind("--webhook-bind-address", 0) == 0) {
      kept.push_back("--webhook-bind-address=127.0.0.1:0");
      kept.push_back("--webhook-crds=");
      continue;
    }
    kept.push_back(text);
  }
  return kept;
}

// A kubeconfig holding only a TokenRequest token of the ServiceAccount.
std::string service_account_kubeconfig(const std::string& namespace_, const std::string& account) {
  const std::string output =
      trimmed(testenv::kubectl_or_fail("create token " + account + " -n " + namespace_ + " --duration=1h"));
  const std::string token = output.substr(output.find_last_of('\n') + 1);
  const std::string path = testenv::binary_dir() + "/testenv/" + namespace_ + "-" + account + ".kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""
                      << testenv::server_url() << "\", certificate-authority: \"" << testenv::ca_path()
                      << "\"}}]\nusers: [{name: u, user: {token: \"" << token
                      << "\"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n";
  return path;
}

}  // namespace

TEST_CASE("packaging: with watchNamespaces the chart grants Roles only, and the operator works with them",
          "[packaging][helm][rbac][namespaced]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace release_namespace("pkg-ns-release");
  testenv::ScopedNamespace watched("pkg-ns-watched");
  testenv::ScopedNamespace unwatched("pkg-ns-other");
  const std::string ns = release_namespace.name();
  const std::string release = "pkg-namespaced";
  const std::string account = release + "-my-operator";
  const std::string user = "system:serviceaccount:" + ns + ":" + account;

  testenv::apply_crd();
  ReleaseGuard guard(release, ns);
  {
    const auto installed =
        helm("install " + release + " " + shell_quote(testenv::source_dir() + "/charts/my-operator") +
             " -n " + ns + " --set crds.install=false --set replicaCount=0" +
             " --set podDisruptionBudget.enabled=false --set watchNamespaces[0]=" + watched.name());
    INFO(installed.output);
    REQUIRE(installed.ok());
  }

  // The API server's authorizer: the rules hold in the watched namespace only.
  const std::string as = " --as=" + user;
  CHECK(can(" -n " + watched.name() + as, "list deployments.apps"));
  CHECK(can(" -n " + watched.name() + as, "patch myresources.myorg.io --subresource=status"));
  CHECK_FALSE(can(" -n " + unwatched.name() + as, "list deployments.apps"));
  CHECK_FALSE(can(" --all-namespaces" + as, "list deployments.apps"));
  CHECK_FALSE(can(" --all-namespaces" + as, "watch myresources.myorg.io"));

  const auto arguments = chart_arguments(account, ns);
  INFO("chart arguments: " << [&] {
    std::string joined;
    for (const auto& argument : arguments) joined += argument + " ";
    return joined;
  }());
  CHECK(std::find(arguments.begin(), arguments.end(), "--namespaces=" + watched.name()) != arguments.end());

  const std::size_t mark = audit_mark();
  OperatorProcess operator_process({.user = user,
                                    .pod_namespace = ns,
                                    .extra_args = arguments,
                                    .kubeconfig = service_account_kubeconfig(ns, account)});
  operator_process.start();

  testenv::kubectl_apply(myresource_manifest(watched.name(), "inside", "nginx:1.27.1"));
  testenv::kubectl_apply(myresource_manifest(unwatched.name(), "outside", "nginx:1.27.1"));
  CHECK(eventually([&] { return myresource_ready(watched.name(), "inside"); }, 120s));
  // Delete it while the operator runs: the finalizer and the cleanup work under the Roles too.
  testenv::kubectl_or_fail("delete myresource inside -n " + watched.name() + " --timeout=60s");
  CHECK(testenv::kubectl("get deployment inside -n " + watched.name()).exit_code != 0);

  INFO("operator log:\n" << operator_process.log_tail());
  CHECK(jsonpath("myresource", unwatched.name(), "outside", "{.metadata.finalizers}").empty());
  CHECK(jsonpath("myresource", unwatched.name(), "outside", "{.status}").empty());
  CHECK(testenv::kubectl("get deployment outside -n " + unwatched.name()).exit_code != 0);

  const auto entries = audit_entries(user, mark);
  INFO("the operator's requests:\n" << describe(entries));
  CHECK_FALSE(entries.empty());
  for (const auto& entry : entries) {
    INFO(entry.describe());
    CHECK(entry.code != 403);
    CHECK(entry.namespace_ != unwatched.name());
    if (entry.resource == "deployments" || entry.resource == "myresources")
      CHECK_FALSE(entry.namespace_.empty());
  }
  operator_process.stop();
  testenv::kubectl("delete myresource outside -n " + unwatched.name() + " --wait=false");
}
