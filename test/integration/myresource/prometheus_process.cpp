#include "myresource/prometheus_process.h"

#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "myresource/operator_process.h"
#include "support/testenv.h"

namespace myop::testing {
namespace {

// Debian's package; promtool, from the same package, is run from PATH.
constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";

std::string quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) FAIL("cannot write " << path);
}

std::string labels_text(const rapidjson::Value& metric) {
  std::string text = "{";
  if (metric.IsObject())
    for (auto member = metric.MemberBegin(); member != metric.MemberEnd(); ++member) {
      if (text.size() > 1) text += ", ";
      text += std::string(member->name.GetString()) + "=\"" +
              (member->value.IsString() ? member->value.GetString() : "") + "\"";
    }
  return text + "}";
}

// A [<time>, "<value>"] pair of the API: the value ("NaN", "+Inf" and numbers alike).
double sample_value(const rapidjson::Value& pair) {
  if (!pair.IsArray() || pair.Size() != 2 || !pair[1].IsString()) return std::nan("");
  return std::strtod(pair[1].GetString(), nullptr);
}

}  // namespace

bool QuerySeries::has_finite_value() const {
  for (double value : values)
    if (std::isfinite(value)) return true;
  return false;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

PrometheusProcess::PrometheusProcess() {
  std::string pattern = (std::filesystem::temp_directory_path() / "myop-prometheus-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) FAIL("mkdtemp failed for " << pattern);
  folder_ = pattern;
}

PrometheusProcess::~PrometheusProcess() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void PrometheusProcess::start(const std::string& configuration) {
  REQUIRE(!running());
  if (!std::filesystem::exists(kPrometheusBinary))
    FAIL(kPrometheusBinary << " is missing (Debian package prometheus: run hack/install-deps.sh)");
  const auto config_path = folder_ / "prometheus.yml";
  write_file(config_path, configuration);
  const auto checked = testenv::run("promtool check config " + quoted(config_path.string()));
  if (!checked.ok()) FAIL("promtool check config:\n" << checked.output << "\n" << configuration);

  port_ = free_port();
  std::vector<std::string> arguments = {
      kPrometheusBinary,
      "--config.file=" + config_path.string(),
      "--storage.tsdb.path=" + (folder_ / "data").string(),
      "--web.listen-address=127.0.0.1:" + std::to_string(port_),
      // Neither the console templates of the package nor anything else from /etc or /usr/share.
      "--web.console.templates=" + (folder_ / "consoles").string(),
      "--web.console.libraries=" + (folder_ / "console_libraries").string(),
  };
  const std::string log_path = (folder_ / "prometheus.log").string();
  process_.start(std::move(arguments), log_path);
  const std::string probe = "curl -sf -o /dev/null http://127.0.0.1:" + std::to_string(port_) + "/-/ready";
  const bool ready =
      eventually([&] { return !running() || testenv::run(probe).ok(); }, std::chrono::seconds(30));
  if (!running()) FAIL("prometheus exited during start-up; its log:\n" << log_tail());
  if (!ready) FAIL("prometheus not ready after 30 s; its log:\n" << log_tail());
}

bool PrometheusProcess::running() { return process_.running(); }

void PrometheusProcess::stop() {
  if (!process_.stop(std::chrono::seconds(20)))
    WARN("prometheus was still running 20 s after SIGTERM; killed it");
}

std::string PrometheusProcess::get(const std::string& path) const {
  const auto result = testenv::run("curl -sf http://127.0.0.1:" + std::to_string(port_) + path);
  return result.ok() ? result.output : std::string();
}

QueryResult PrometheusProcess::query(const std::string& promql) const {
  return post_query("/api/v1/query", {"query=" + promql});
}

QueryResult PrometheusProcess::query_range(const std::string& promql, double start, double end,
                                           double step_seconds) const {
  return post_query("/api/v1/query_range",
                    {"query=" + promql, "start=" + std::to_string(start), "end=" + std::to_string(end),
                     "step=" + std::to_string(step_seconds)});
}

QueryResult PrometheusProcess::post_query(const std::string& path,
                                          const std::vector<std::string>& form) const {
  // Each field goes through a file (curl --data-urlencode name@file): PromQL needs no shell quoting.
  std::string command = "curl -s --max-time 30";
  for (std::size_t i = 0; i < form.size(); ++i) {
    const auto equals = form[i].find('=');
    const auto field_file = folder_ / ("form-" + std::to_string(i));
    write_file(field_file, form[i].substr(equals + 1));
    command += " --data-urlencode " + quoted(form[i].substr(0, equals) + "@" + field_file.string());
  }
  command += " http://127.0.0.1:" + std::to_string(port_) + path;
  QueryResult result;
  result.body = testenv::run(command).output;
  rapidjson::Document answer;
  if (answer.Parse(result.body.c_str()).HasParseError() || !answer.IsObject() ||
      !answer.HasMember("status")) {
    result.error = "not a JSON answer: " + result.body;
    return result;
  }
  if (std::string(answer["status"].GetString()) != "success") {
    result.error =
        answer.HasMember("error") && answer["error"].IsString() ? answer["error"].GetString() : "error";
    return result;
  }
  const rapidjson::Value& data = answer["data"];
  const std::string type = data["resultType"].GetString();
  const rapidjson::Value& found = data["result"];
  if (type == "scalar") {
    result.series.push_back({"{}", {sample_value(found)}});
    return result;
  }
  for (const auto& item : found.GetArray()) {
    QuerySeries series;
    series.labels = labels_text(item["metric"]);
    if (item.HasMember("value")) series.values.push_back(sample_value(item["value"]));
    if (item.HasMember("values"))
      for (const auto& pair : item["values"].GetArray()) series.values.push_back(sample_value(pair));
    result.series.push_back(std::move(series));
  }
  return result;
}

std::string PrometheusProcess::log_tail(std::size_t lines) const {
  return testing::log_tail((folder_ / "prometheus.log").string(), lines);
}

}  // namespace myop::testing
