// The alerts under promtool (Debian's prometheus package, hack/install-deps.sh): config/prometheus's
// PrometheusRule and the chart's are valid rule files (`promtool check rules` on their `spec`), and
// both pass the unit tests of test/prometheus/rules_test.yaml (`promtool test rules`), which hold for
// every alert a series that fires it and one that keeps it silent. Those tests can fail: a threshold
// moved, a `for:` shortened, a comparison turned round or another job selected each break them.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "packaging/packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

std::string promtool() {
  static const std::string binary = [] {
    const auto result = testenv::run("command -v promtool");
    return result.ok() ? trimmed(result.output) : std::string();
  }();
  if (binary.empty()) FAIL("promtool is not on PATH (Debian package prometheus: run hack/install-deps.sh)");
  return binary;
}

std::filesystem::path rules_test_file() {
  return std::filesystem::path(testenv::source_dir()) / "test/prometheus/rules_test.yaml";
}

// A PrometheusRule's spec is a Prometheus rule file: {groups: [...]}.
YAML::Node shipped_rule_file() {
  return YAML::LoadFile(testenv::source_dir() + "/config/prometheus/rules.yaml")["spec"];
}

YAML::Node chart_rule_file() {
  const auto objects =
      yaml_documents(helm_template("-n my-operator-system --set metrics.prometheusRule.enabled=true "
                                   "--show-only templates/prometheusrule.yaml"));
  REQUIRE(objects.size() == 1);
  REQUIRE(objects[0]["kind"].as<std::string>() == "PrometheusRule");
  return objects[0]["spec"];
}

std::string yaml_text(const YAML::Node& node) {
  YAML::Emitter emitter;
  emitter << node;
  return std::string(emitter.c_str()) + "\n";
}

// The alerting rules of a rule file, by alert name.
std::map<std::string, YAML::Node> alerts_of(const YAML::Node& rule_file) {
  std::map<std::string, YAML::Node> alerts;
  for (const auto& group : rule_file["groups"])
    for (const auto& rule : group["rules"])
      if (rule["alert"]) alerts[rule["alert"].as<std::string>()] = YAML::Node(rule);
  return alerts;
}

// `promtool check rules` of a rule file.
testenv::CommandResult check_rules(const YAML::Node& rule_file) {
  TemporaryFolder folder("myop-promtool-check");
  write_text(folder.path() / "rules.yaml", yaml_text(rule_file));
  return testenv::run(promtool() + " check rules " + shell_quote((folder.path() / "rules.yaml").string()));
}

// `promtool test rules` of the unit tests `tests` (the text of a rules_test.yaml) against a rule file,
// written next to them as the rules.yaml they name.
testenv::CommandResult test_rules(const YAML::Node& rule_file, const std::string& tests) {
  TemporaryFolder folder("myop-promtool-test");
  write_text(folder.path() / "rules.yaml", yaml_text(rule_file));
  write_text(folder.path() / "rules_test.yaml", tests);
  return testenv::run("cd " + shell_quote(folder.path().string()) + " && " + promtool() +
                      " test rules rules_test.yaml");
}

// The rule file and the unit tests without annotations: the chart words its summaries without the
// threshold (a value of values.yaml), so only its expressions, durations and labels are compared.
YAML::Node without_annotations(YAML::Node rule_file) {
  rule_file = YAML::Clone(rule_file);
  for (auto group : rule_file["groups"])
    for (auto rule : group["rules"]) rule.remove("annotations");
  return rule_file;
}

std::string tests_without_annotations() {
  YAML::Node tests = YAML::LoadFile(rules_test_file().string());
  for (auto test : tests["tests"])
    for (auto alert_test : test["alert_rule_test"])
      for (auto alert : alert_test["exp_alerts"]) alert.remove("exp_annotations");
  return yaml_text(tests);
}

// One broken copy of an alert: what was changed, and the rule file with the change.
struct Mutant {
  std::string change;
  YAML::Node rule_file;
};

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// For each alert, copies of the rule file with that alert broken in one way each.
std::vector<Mutant> mutants_of(const YAML::Node& rule_file) {
  std::vector<Mutant> mutants;
  auto with_rule = [&](const std::string& alert, const std::function<void(YAML::Node)>& change) {
    YAML::Node copy = YAML::Clone(rule_file);
    for (auto group : copy["groups"])
      for (auto rule : group["rules"])
        if (rule["alert"].as<std::string>("") == alert) change(rule);
    return copy;
  };
  static const std::regex comparison(R"(([<>])\s*([0-9]+(\.[0-9]+)?)\s*$)");
  for (const auto& entry : alerts_of(rule_file)) {
    const std::string alert = entry.first;
    const YAML::Node rule = entry.second;
    const std::string expr = rule["expr"].as<std::string>();
    std::smatch match;
    REQUIRE(std::regex_search(expr, match, comparison));
    const std::string op = match[1];
    const double threshold = std::stod(match[2]);
    const auto prefix = static_cast<std::size_t>(match.position(0));
    auto with_comparison = [&](const std::string& new_op, double new_threshold) {
      return with_rule(alert, [&](YAML::Node changed) {
        changed["expr"] = expr.substr(0, prefix) + new_op + " " + number_text(new_threshold) + "\n";
      });
    };
    // Past the silent cases' series, then short of the firing cases' (leader_election_master_status
    // is 0 or 1: "< 0.7" would change nothing, "< 0" keeps every replica from counting as none).
    const double looser = op == ">" ? threshold * 0.7 : threshold * 1.3;
    const double stricter = op == ">" ? threshold * 1.3 : 0;
    mutants.push_back({alert + ": threshold " + number_text(looser), with_comparison(op, looser)});
    mutants.push_back({alert + ": threshold " + number_text(stricter), with_comparison(op, stricter)});
    mutants.push_back(
        {alert + ": comparison turned round", with_comparison(op == ">" ? "<" : ">", threshold)});

    const std::string duration = rule["for"].as<std::string>();
    REQUIRE(duration.back() == 'm');
    const std::string shorter = std::to_string(std::stoi(duration) - 1) + "m";
    mutants.push_back({alert + ": for " + shorter,
                       with_rule(alert, [&](YAML::Node changed) { changed["for"] = shorter; })});

    const std::string job = R"(job="my-operator-metrics")";
    REQUIRE(expr.find(job) != std::string::npos);
    mutants.push_back({alert + ": another job", with_rule(alert, [&](YAML::Node changed) {
                         changed["expr"] = std::regex_replace(expr, std::regex(job), R"(job="another-job")");
                       })});
  }
  return mutants;
}

}  // namespace

TEST_CASE("prometheus: promtool check rules accepts config/prometheus's alerts and the chart's",
          "[packaging][prometheus]") {
  const YAML::Node shipped = shipped_rule_file();
  const YAML::Node chart = chart_rule_file();
  for (const auto& [source, rule_file] : {std::pair{"config/prometheus/rules.yaml", shipped},
                                          std::pair{"chart templates/prometheusrule.yaml", chart}}) {
    INFO(source);
    const auto result = check_rules(rule_file);
    INFO(result.output);
    CHECK(result.ok());
    CHECK(result.output.find("SUCCESS: 7 rules found") != std::string::npos);
  }
  std::set<std::string> shipped_names;
  std::set<std::string> chart_names;
  for (const auto& [name, rule] : alerts_of(shipped)) shipped_names.insert(name);
  for (const auto& [name, rule] : alerts_of(chart)) chart_names.insert(name);
  CHECK(shipped_names.size() == 7);
  CHECK(shipped_names == chart_names);
}

TEST_CASE(
    "prometheus: every alert fires on a series that should fire it and stays silent on one that should not",
    "[packaging][prometheus]") {
  // rules_test.yaml holds both kinds of case for every alert; a firing case also checks the
  // evaluation before `for:` has passed, when nothing fires yet.
  const YAML::Node tests = YAML::LoadFile(rules_test_file().string());
  std::map<std::string, int> firing;
  std::map<std::string, int> firing_after_pending;
  std::map<std::string, int> silent;
  for (const auto& test : tests["tests"]) {
    std::map<std::string, std::vector<std::pair<std::string, bool>>> evaluations;  // alert -> (time, fires)
    for (const auto& alert_test : test["alert_rule_test"])
      evaluations[alert_test["alertname"].as<std::string>()].emplace_back(
          alert_test["eval_time"].as<std::string>(), alert_test["exp_alerts"].size() > 0);
    for (const auto& [alert, checks] : evaluations) {
      bool fires = false;
      for (const auto& check : checks) fires = fires || check.second;
      if (!fires && test["input_series"].size() > 0) ++silent[alert];
      if (fires) ++firing[alert];
      if (fires && !checks.front().second) ++firing_after_pending[alert];
    }
  }
  for (const auto& [alert, rule] : alerts_of(shipped_rule_file())) {
    INFO(alert);
    CHECK(firing[alert] >= 1);
    CHECK(firing_after_pending[alert] >= 1);
    CHECK(silent[alert] >= 1);
  }

  SECTION("config/prometheus/rules.yaml") {
    const auto result = test_rules(shipped_rule_file(), read_text(rules_test_file()));
    INFO(result.output);
    CHECK(result.ok());
    CHECK(result.output.find("SUCCESS") != std::string::npos);
  }
  SECTION("the chart's PrometheusRule with its default values") {
    const auto result = test_rules(without_annotations(chart_rule_file()), tests_without_annotations());
    INFO(result.output);
    CHECK(result.ok());
    CHECK(result.output.find("SUCCESS") != std::string::npos);
  }
}

TEST_CASE("prometheus: promtool test rules fails when an alert is broken", "[packaging][prometheus]") {
  const std::string tests = read_text(rules_test_file());
  const auto mutants = mutants_of(shipped_rule_file());
  CHECK(mutants.size() == 7 * 5);
  for (const auto& mutant : mutants) {
    INFO(mutant.change);
    // Still a valid rule file: it is the unit tests that catch it.
    CHECK(check_rules(mutant.rule_file).ok());
    const auto result = test_rules(mutant.rule_file, tests);
    INFO(result.output);
    CHECK_FALSE(result.ok());
    CHECK(result.output.find("FAILED") != std::string::npos);
  }
}
