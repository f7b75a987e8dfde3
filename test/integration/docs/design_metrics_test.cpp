// docs/design.md's metrics table and what the operator binary exposes are the same list of metric
// families: scraped from the built my-operator on the real control plane, in the configurations
// that between them register every family (leader election, the webhook with self-managed
// certificates, tracing and a fleet with one unreachable member in one process; sharding and the
// storage migration in another).
//
// A running operator is the one place that shows them all: prometheus-cpp leaves a family without a
// series out of what it collects, and several get their first series only from traffic (the
// rest_client_* families per code, verb and host; the webhook certificates' expiry after a pass),
// the HTTP servers' once run() starts the servers; and building the manager needs an API server.
//
// Tagged [sharding]: it runs a sharded replica over every namespace, as lane B's cases do.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "../../unit/docs/markdown.h"
#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// The metric names of docs/design.md's "## Metrics" table.
std::set<std::string> documented_families() {
  const std::string design = testenv::read_file(testenv::source_dir() + "/docs/design.md");
  std::set<std::string> names;
  for (const auto& row : docs::table_rows(docs::section(design, "## Metrics"))) {
    REQUIRE(row.size() == 4);  // metric | type | labels | meaning
    const auto spans = docs::code_spans(row[0]);
    REQUIRE(spans.size() == 1);
    names.insert(spans.front());
  }
  return names;
}

// The families of a /metrics text: the names of its "# TYPE <name> <type>" lines.
std::set<std::string> exposed_families(const std::string& metrics) {
  std::set<std::string> names;
  std::istringstream lines(metrics);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("# TYPE ")) continue;
    std::istringstream fields(line.substr(7));
    std::string name;
    fields >> name;
    names.insert(name);
  }
  return names;
}

std::string listed(const std::set<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += "\n  " + name;
  return text.empty() ? " (none)" : text;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) FAIL("expected '" << from << "' in:\n" << text);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE(
    "docs: every metric family the operator exposes is in design.md's metrics table, and every row is "
    "exposed",
    "[docs][metrics][sharding]") {
  const std::set<std::string> documented = documented_families();
  REQUIRE(documented.size() > 30);

  // Leader election, the conversion webhook with self-managed certificates (its Secrets in the
  // namespace; the fixture's CRD names another webhook, so its caBundle is left alone), tracing to
  // a collector that is not there. Namespaced: it reconciles nothing the other one does.
  testenv::ScopedNamespace leader_namespace("metrics-doc-leader");
  OperatorOptions leader =
      operator_options("myop-metrics-doc-leader", {leader_namespace.name()}, leader_namespace.name());
  leader.extra_cluster_role_files = {"webhook_role.yaml"};
  leader.extra_role_files = {"webhook_secret_role.yaml", "fleet_role.yaml"};
  leader.extra_args = {"--leader-elect",
                       "--fleet-kubeconfig-secrets",
                       "--webhook-bind-address",
                       "127.0.0.1:" + std::to_string(free_port()),
                       "--webhook-cert-check-interval",
                       "1s",
                       "--otlp-endpoint",
                       "http://127.0.0.1:" + std::to_string(free_port())};

  // A fleet with one member that cannot be reached (nothing listens at its server): engaged and
  // marked unready, so the fleet's families get their series.
  const std::string ca_data = testenv::kubectl_or_fail(
      "config view --raw --minify -o jsonpath={.clusters[0].cluster.certificate-authority-data}");
  const std::string member_kubeconfig = testenv::binary_dir() + "/metrics-doc-member.kubeconfig";
  {
    std::ofstream file(member_kubeconfig);
    file << "apiVersion: v1\nkind: Config\nclusters: [{name: m, cluster: {server: \"https://127.0.0.1:"
         << free_port() << "\", certificate-authority-data: " << ca_data
         << "}}]\nusers: [{name: m, user: {token: unused}}]\ncontexts: [{name: m, context: {cluster: m, "
            "user: m}}]\ncurrent-context: m\n";
  }
  testenv::kubectl_or_fail("create secret generic unreachable-member -n " + leader_namespace.name() +
                           " --from-file=kubeconfig=" + member_kubeconfig);
  testenv::kubectl_or_fail("label secret unreachable-member -n " + leader_namespace.name() +
                           " sigs.k8s.io/multicluster-runtime-kubeconfig=true");

  // Sharding over every namespace: the shard metrics, and the storage migrator (which finds nothing
  // to migrate: the fixture's CRD stores v1beta1 only).
  testenv::ScopedNamespace shard_namespace("metrics-doc-shards");
  const auto role = testenv::kubectl_apply(
      replaced(testenv::read_file(testenv::source_dir() + "/config/rbac/sharding_role.yaml"),
               "namespace: my-operator-system", "namespace: " + shard_namespace.name()));
  INFO(role.output);
  REQUIRE(role.ok());
  OperatorOptions sharded = operator_options("myop-metrics-doc-shard", {}, shard_namespace.name());
  sharded.extra_args = {"--sharding"};
  testenv::kubectl_or_fail("create rolebinding " + sharded.user + "-sharding -n " + shard_namespace.name() +
                           " --role my-operator-sharding --user " + sharded.user);

  OperatorProcess leader_process(leader);
  OperatorProcess sharded_process(sharded);
  leader_process.start();
  sharded_process.start();

  std::set<std::string> exposed;
  std::set<std::string> missing;
  const auto scrape = [&] {
    exposed = exposed_families(leader_process.metrics());
    exposed.merge(exposed_families(sharded_process.metrics()));
    missing.clear();
    for (const auto& name : documented)
      if (exposed.count(name) == 0) missing.insert(name);
    return missing.empty();
  };
  // Families whose first series comes with the first requests and the first certificate pass.
  const bool all_exposed = eventually(scrape, 120s);
  INFO("leader's log:\n"
       << leader_process.log_tail(20) << "\nsharded replica's log:\n"
       << sharded_process.log_tail(20));

  std::set<std::string> undocumented;
  for (const auto& name : exposed)
    if (documented.count(name) == 0) undocumented.insert(name);
  INFO("exposed by the operator but not in docs/design.md's metrics table:" << listed(undocumented));
  INFO("in docs/design.md's metrics table but exposed by neither process within 120 s:" << listed(missing));
  CHECK(undocumented.empty());
  CHECK(all_exposed);
  CHECK(leader_process.running());
  CHECK(sharded_process.running());
}
