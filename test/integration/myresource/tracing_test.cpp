// Tracing against a real OTLP receiver: the operator binary sends its reconcile traces to Jaeger
// (hack/tools/jaeger) over OTLP/HTTP, and the test reads them back through Jaeger's query API
// (GET /api/traces). And with the collector down, reconciles still complete and the lost spans are
// counted in myoperator_trace_spans_dropped_total.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "myresource/cluster_listing.h"
#include "myresource/jaeger_process.h"
#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// One span as Jaeger's query API returns it, tags as text.
struct JaegerSpan {
  std::string trace_id;
  std::string span_id;
  std::string operation;
  std::string service;
  std::vector<std::pair<std::string, std::string>> parents;  // CHILD_OF references: trace id, span id
  std::map<std::string, std::string> tags;
  std::string tag(const std::string& key) const {
    const auto found = tags.find(key);
    return found == tags.end() ? std::string() : found->second;
  }
};

std::string tag_text(const rapidjson::Value& value) {
  if (value.IsString()) return value.GetString();
  if (value.IsBool()) return value.GetBool() ? "true" : "false";
  if (value.IsInt64()) return std::to_string(value.GetInt64());
  if (value.IsNumber()) return std::to_string(value.GetDouble());
  return "";
}

// Every trace of the service, each as its spans.
std::vector<std::vector<JaegerSpan>> parse_traces(const std::string& body) {
  std::vector<std::vector<JaegerSpan>> traces;
  rapidjson::Document document;
  document.Parse(body.c_str());
  if (document.HasParseError() || !document.IsObject() || !document.HasMember("data") ||
      !document["data"].IsArray())
    return traces;
  for (const auto& trace : document["data"].GetArray()) {
    std::map<std::string, std::string> services;
    if (trace.HasMember("processes"))
      for (const auto& process : trace["processes"].GetObject())
        services[process.name.GetString()] = process.value["serviceName"].GetString();
    std::vector<JaegerSpan> spans;
    for (const auto& span : trace["spans"].GetArray()) {
      JaegerSpan parsed;
      parsed.trace_id = span["traceID"].GetString();
      parsed.span_id = span["spanID"].GetString();
      parsed.operation = span["operationName"].GetString();
      parsed.service = services[span["processID"].GetString()];
      if (span.HasMember("references"))
        for (const auto& reference : span["references"].GetArray())
          if (std::string(reference["refType"].GetString()) == "CHILD_OF")
            parsed.parents.emplace_back(reference["traceID"].GetString(), reference["spanID"].GetString());
      for (const auto& tag : span["tags"].GetArray())
        parsed.tags[tag["key"].GetString()] = tag_text(tag["value"]);
      spans.push_back(std::move(parsed));
    }
    traces.push_back(std::move(spans));
  }
  return traces;
}

const JaegerSpan* root_reconcile(const std::vector<JaegerSpan>& trace, const std::string& namespace_,
                                 const std::string& name) {
  for (const auto& span : trace)
    if (span.operation == "reconcile" && span.parents.empty() &&
        span.tag("k8s.namespace.name") == namespace_ && span.tag("myoperator.name") == name)
      return &span;
  return nullptr;
}

bool has_deployment_write(const std::vector<JaegerSpan>& trace) {
  for (const auto& span : trace)
    if (span.tag("myoperator.api.resource") == "deployments" &&
        (span.tag("http.request.method") == "PATCH" || span.tag("http.request.method") == "POST"))
      return true;
  return false;
}

}  // namespace

TEST_CASE("tracing: a MyResource's reconcile is a trace in Jaeger with its API calls as child spans",
          "[myresource][operator][trace]") {
  JaegerProcess jaeger;
  testenv::ScopedNamespace ns("mr-trace");
  FinalizerRelease release(ns.name());
  OperatorOptions options = operator_options("myop-trace", {ns.name()}, ns.name());
  options.extra_args = {"--otlp-endpoint", jaeger.otlp_endpoint(), "--trace-sampling-ratio", "1"};
  OperatorProcess operator_process(options);
  operator_process.start();
  REQUIRE(testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));

  // Spans leave the operator in batches every 5 s: poll until the reconcile that created the
  // Deployment is stored, and the one the ADDED event triggered.
  std::vector<std::vector<JaegerSpan>> traces;
  std::optional<std::vector<JaegerSpan>> writing_trace;
  std::optional<JaegerSpan> added_root;
  const bool found = eventually(
      [&] {
        traces = parse_traces(jaeger.get("/api/traces?service=my-operator&limit=1000&lookback=1h"));
        writing_trace.reset();
        added_root.reset();
        for (const auto& trace : traces) {
          const JaegerSpan* root = root_reconcile(trace, ns.name(), "web");
          if (root == nullptr) continue;
          if (root->tag("myoperator.trigger.event_type") == "ADDED") added_root = *root;
          if (has_deployment_write(trace)) writing_trace = trace;
        }
        return writing_trace && added_root;
      },
      60s);
  INFO("Jaeger's log:\n" << jaeger.log() << "\noperator's log:\n" << operator_process.log_tail(30));
  INFO(traces.size() << " traces of service my-operator in Jaeger");
  REQUIRE(found);

  // The ADDED event's reconcile: the object, the controller, the trigger and the result.
  CHECK(added_root->service == "my-operator");
  CHECK(added_root->tag("myoperator.controller") == "myresource");
  CHECK(added_root->tag("myoperator.trigger.initial_list") == "false");  // created after the start
  CHECK_FALSE(added_root->tag("myoperator.trigger.wait_seconds").empty());
  CHECK_FALSE(added_root->tag("myoperator.queue.wait_seconds").empty());
  CHECK(added_root->tag("myoperator.reconcile_id").size() == 36);
  const std::string result = added_root->tag("myoperator.result");
  CHECK((result == "success" || result == "requeue" || result == "requeue_after"));

  // The reconcile that wrote the Deployment: every other span is a child of its root, in its trace.
  const JaegerSpan* root = root_reconcile(*writing_trace, ns.name(), "web");
  REQUIRE(root != nullptr);
  int api_calls = 0;
  bool deployment_written = false;
  for (const auto& span : *writing_trace) {
    if (&span == root || span.span_id == root->span_id) continue;
    INFO(span.operation);
    CHECK(span.trace_id == root->trace_id);
    REQUIRE(span.parents.size() == 1);
    CHECK(span.parents[0].first == root->trace_id);
    CHECK(span.parents[0].second == root->span_id);
    CHECK(span.tag("span.kind") == "client");
    CHECK_FALSE(span.tag("http.request.method").empty());
    CHECK_FALSE(span.tag("http.response.status_code").empty());
    CHECK_FALSE(span.tag("http.request.resend_count").empty());
    CHECK_FALSE(span.tag("server.address").empty());
    CHECK(span.tag("k8s.namespace.name") == ns.name());
    ++api_calls;
    if (span.tag("myoperator.api.resource") == "deployments" && span.tag("http.request.method") == "PATCH") {
      deployment_written = true;
      CHECK(span.operation == "PATCH deployments");
      CHECK(span.tag("myoperator.api.group") == "apps");
      const std::string code = span.tag("http.response.status_code");
      CHECK((code == "200" || code == "201"));
    }
  }
  CHECK(api_calls >= 1);
  CHECK(deployment_written);
}

TEST_CASE("tracing: with the collector down, reconciles complete and the lost spans are counted",
          "[myresource][operator][trace]") {
  testenv::ScopedNamespace ns("mr-trace-down");
  FinalizerRelease release(ns.name());
  OperatorOptions options = operator_options("myop-trace-down", {ns.name()}, ns.name());
  // Nothing listens there: every export is refused.
  options.extra_args = {"--otlp-endpoint", "http://127.0.0.1:" + std::to_string(free_port()),
                        "--trace-sampling-ratio", "1"};
  OperatorProcess operator_process(options);
  operator_process.start();
  REQUIRE(testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1")).ok());
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
  // The batch leaves within 5 s, is refused twice (1 s apart), and is counted.
  const std::string dropped = R"(myoperator_trace_spans_dropped_total{reason="export_failed"})";
  INFO(operator_process.log_tail(30));
  REQUIRE(eventually([&] { return operator_process.metric(dropped) > 0; }, 60s));
  CHECK(operator_process.metric(R"(myoperator_trace_spans_dropped_total{reason="queue_full"})") == 0);
  CHECK(operator_process.running());
}
