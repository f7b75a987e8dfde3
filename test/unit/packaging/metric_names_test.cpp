// The dashboard and the alerts use only metric names of docs/design.md ("Metrics"), so they
// show data once the operator exports what the contract says.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>

#include "packaging_files.h"

using namespace myop::packaging;

namespace {

const std::set<std::string> kContractMetrics = {
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds",
    "controller_runtime_max_concurrent_reconciles",
    "controller_runtime_active_workers",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "rest_client_requests_total",
    "leader_election_master_status",
    "myoperator_event_to_reconcile_seconds",
    "myoperator_managed_resources",
    "myoperator_canaries_active",
    "myoperator_orphans_total",
    "myoperator_build_info",
    "myoperator_webhook_certificate_expiry_timestamp_seconds",
    "myoperator_webhook_certificate_last_success_timestamp_seconds",
    "myoperator_webhook_certificate_checks_total",
};

// Metric names in a text: identifiers with one of the contract's prefixes, without the
// _bucket/_sum/_count suffixes of histogram series.
std::set<std::string> metric_names(const std::string& text) {
  static const std::regex name(
      R"(\b(controller_runtime|workqueue|rest_client|leader_election|myoperator)_[a-z_]+)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
    std::string metric = it->str();
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (metric.size() > suffix.size() &&
          metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          !kContractMetrics.count(metric))
        metric.resize(metric.size() - suffix.size());
    }
    names.insert(metric);
  }
  return names;
}

}  // namespace

TEST_CASE("packaging: dashboards and alerts use only the contract's metric names", "[packaging][metrics]") {
  const auto root = repository_root();
  for (const char* file : {"config/grafana/my-operator-dashboard.json", "config/prometheus/rules.yaml",
                           "charts/my-operator/templates/prometheusrule.yaml"}) {
    const std::set<std::string> names = metric_names(read_text(root / file));
    INFO(file);
    CHECK(names.size() >= 4);
    for (const std::string& name : names) {
      INFO("unknown metric " << name);
      CHECK(kContractMetrics.count(name) == 1);
    }
  }
}

TEST_CASE("packaging: the dashboard shows every metric of the contract", "[packaging][metrics]") {
  const std::set<std::string> names =
      metric_names(read_text(repository_root() / "config/grafana/my-operator-dashboard.json"));
  for (const std::string& metric : kContractMetrics) {
    INFO("the dashboard has no panel for " << metric);
    CHECK(names.count(metric) == 1);
  }
}

TEST_CASE(
    "packaging: the alerts cover error rate, p95 latency, queue backlog, a missing leader and the webhook "
    "certificates",
    "[packaging][metrics]") {
  const auto rules = yaml_documents(read_text(repository_root() / "config/prometheus/rules.yaml"));
  REQUIRE(rules.size() == 1);
  std::map<std::string, std::string> expressions;
  for (const YAML::Node& rule : rules[0]["spec"]["groups"][0]["rules"])
    expressions[rule["alert"].as<std::string>()] = rule["expr"].as<std::string>();
  CHECK(expressions["MyOperatorReconcileErrorRateHigh"].find("controller_runtime_reconcile_errors_total") !=
        std::string::npos);
  CHECK(expressions["MyOperatorReconcileLatencyHigh"].find("histogram_quantile(0.95") != std::string::npos);
  CHECK(expressions["MyOperatorWorkQueueBacklog"].find("workqueue_depth") != std::string::npos);
  CHECK(expressions["MyOperatorNoLeader"].find("leader_election_master_status") != std::string::npos);
  CHECK(expressions["MyOperatorWebhookCertificateExpiringSoon"].find(
            "myoperator_webhook_certificate_expiry_timestamp_seconds") != std::string::npos);
  CHECK(expressions["MyOperatorWebhookCertificateRenewalFailing"].find(
            "myoperator_webhook_certificate_last_success_timestamp_seconds") != std::string::npos);
}
