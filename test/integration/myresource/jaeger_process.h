// Jaeger (hack/tools/jaeger, cmd/jaeger: an OpenTelemetry collector with an OTLP/HTTP receiver,
// in-memory trace storage and Jaeger's query API) as a process of the test, on 127.0.0.1 ports of
// its own, for the tracing tests: the operator sends spans to otlp_endpoint(), the test reads them
// back through GET /api/traces.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "myresource/operator_process.h"
#include "support/child_process.h"
#include "support/testenv.h"

namespace myop::testing {

class JaegerProcess {
 public:
  JaegerProcess() {
    const std::string binary = testenv::tool_binary("jaeger", "jaeger");

    char folder_template[] = "/tmp/myop-jaeger-XXXXXX";
    if (::mkdtemp(folder_template) == nullptr) FAIL("cannot make a folder for Jaeger");
    folder_ = folder_template;
    otlp_port_ = free_port();
    query_port_ = free_port();
    const unsigned short query_grpc_port = free_port();
    const std::string config_path = folder_ + "/config.yaml";
    std::ofstream(config_path) << "service:\n"
                                  "  extensions: [jaeger_storage, jaeger_query]\n"
                                  "  pipelines:\n"
                                  "    traces:\n"
                                  "      receivers: [otlp]\n"
                                  "      exporters: [jaeger_storage_exporter]\n"
                                  "  telemetry:\n"
                                  "    metrics:\n"
                                  "      level: none\n"
                                  "    logs:\n"
                                  "      level: warn\n"
                                  "extensions:\n"
                                  "  jaeger_query:\n"
                                  "    enable_tracing: false\n"
                                  "    storage:\n"
                                  "      traces: memory\n"
                                  "    http:\n"
                                  "      endpoint: 127.0.0.1:"
                               << query_port_ << "\n    grpc:\n      endpoint: 127.0.0.1:" << query_grpc_port
                               << "\n"
                                  "  jaeger_storage:\n"
                                  "    backends:\n"
                                  "      memory:\n"
                                  "        memory:\n"
                                  "          max_traces: 100000\n"
                                  "receivers:\n"
                                  "  otlp:\n"
                                  "    protocols:\n"
                                  "      http:\n"
                                  "        endpoint: 127.0.0.1:"
                               << otlp_port_
                               << "\n"
                                  "exporters:\n"
                                  "  jaeger_storage_exporter:\n"
                                  "    trace_storage: memory\n";
    log_path_ = folder_ + "/jaeger.log";
    process_.start({binary, "--config=" + config_path}, log_path_);
    const bool ready = eventually(
        [&] { return testenv::run("curl -sf -o /dev/null " + query_url() + "/api/services").ok(); },
        std::chrono::seconds(60));
    if (!ready) FAIL("Jaeger did not answer on " << query_url() << ":\n" << log());
  }

  ~JaegerProcess() {
    process_.stop(std::chrono::seconds(10));
    testenv::run("rm -rf '" + folder_ + "'");
  }
  JaegerProcess(const JaegerProcess&) = delete;
  JaegerProcess& operator=(const JaegerProcess&) = delete;

  // What the operator's --otlp-endpoint names.
  std::string otlp_endpoint() const { return "http://127.0.0.1:" + std::to_string(otlp_port_); }
  std::string query_url() const { return "http://127.0.0.1:" + std::to_string(query_port_); }
  // GET <query>/<path_and_query>; "" when it fails.
  std::string get(const std::string& path_and_query) const {
    const auto result = testenv::run("curl -sf '" + query_url() + path_and_query + "'");
    return result.ok() ? result.output : std::string();
  }
  std::string log() const { return log_tail(log_path_, 40); }

 private:
  std::string folder_;
  std::string log_path_;
  unsigned short otlp_port_ = 0;
  unsigned short query_port_ = 0;
  ChildProcess process_;
};

}  // namespace myop::testing
