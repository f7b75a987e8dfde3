// A real Prometheus (the `prometheus` binary of Debian's package, hack/install-deps.sh) for the
// integration tests: started as a process of its own on a free 127.0.0.1 port, with its data in a
// temporary folder, stopped and removed when the object goes away. Tests ask it through its HTTP API
// (/api/v1/query, /api/v1/query_range, /api/v1/targets) as Grafana or a person would.
#pragma once

#include <sys/types.h>
#include <filesystem>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace myop::testing {

// One series of a query's answer: its labels as text ({a="b", ...}) and its values (NaN kept).
struct QuerySeries {
  std::string labels;
  std::vector<double> values;
  // Whether a value is a number a panel can draw (not NaN, not infinite).
  bool has_finite_value() const;
};

// A query's answer: `error` is empty when Prometheus answered "success".
struct QueryResult {
  std::string error;
  std::vector<QuerySeries> series;
  std::string body;  // the JSON, for messages
};

class PrometheusProcess {
 public:
  // Makes the folder (files the configuration names go there, see folder()); does not start.
  PrometheusProcess();
  ~PrometheusProcess();  // stop(), and removes the folder
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  const std::filesystem::path& folder() const { return folder_; }

  // Writes `configuration` as prometheus.yml (checked first with `promtool check config`), starts
  // Prometheus and waits (30 s) until /-/ready answers 200; FAILs with its log otherwise.
  void start(const std::string& configuration);
  // SIGTERM, then SIGKILL after 20 s; waits for the exit. No-op when not running.
  void stop();
  bool running();

  // An instant query at the server's now.
  QueryResult query(const std::string& promql) const;
  // A range query from `start` to `end` (Unix seconds) every `step_seconds`, as Grafana's graphs ask.
  QueryResult query_range(const std::string& promql, double start, double end, double step_seconds) const;
  // GET of an API path (e.g. /api/v1/targets): the body, "" when it cannot be read.
  std::string get(const std::string& path) const;
  std::string log_tail(std::size_t lines = 40) const;
  unsigned short port() const { return port_; }

 private:
  QueryResult post_query(const std::string& path, const std::vector<std::string>& form) const;

  std::filesystem::path folder_;
  ChildProcess process_;
  unsigned short port_ = 0;
};

// Seconds since the Unix epoch, as the query API takes them.
double unix_now();

}  // namespace myop::testing
