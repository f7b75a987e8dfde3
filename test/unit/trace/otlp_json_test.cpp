#include "trace/otlp_json.h"

#include <rapidjson/document.h>

#include <catch2/catch.hpp>

using namespace myop::trace;

namespace {

const rapidjson::Value* attribute(const rapidjson::Value& attributes, const std::string& key) {
  for (const auto& entry : attributes.GetArray())
    if (key == entry["key"].GetString()) return &entry["value"];
  return nullptr;
}

}  // namespace

TEST_CASE("OTLP JSON: a span is encoded as an ExportTraceServiceRequest", "[trace][otlp]") {
  SpanData span;
  span.trace_id = new_trace_id();
  span.span_id = new_span_id();
  span.parent_span_id = new_span_id();
  span.name = "PATCH deployments";
  span.kind = SpanKind::client;
  span.start = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1'700'000'000'123'456'789));
  span.end = span.start + std::chrono::milliseconds(5);
  span.attributes = {{"http.request.method", std::string("PATCH")},
                     {"http.response.status_code", std::int64_t{200}},
                     {"myoperator.queue.wait_seconds", 0.25},
                     {"myoperator.trigger.initial_list", true},
                     {"quote", std::string("a \"b\"\n")}};
  span.status = StatusCode::error;
  span.status_message = "HTTP 500";
  SpanData root;
  root.trace_id = span.trace_id;
  root.span_id = span.parent_span_id;
  root.name = "reconcile";

  const std::string body = encode_otlp_json({span, root}, {"my-operator", "1.2.3", "my-operator/trace"});
  rapidjson::Document document;
  document.Parse(body.c_str());
  INFO(body);
  REQUIRE_FALSE(document.HasParseError());

  REQUIRE(document["resourceSpans"].Size() == 1);
  const auto& resource_spans = document["resourceSpans"][0];
  const auto& resource_attributes = resource_spans["resource"]["attributes"];
  REQUIRE(attribute(resource_attributes, "service.name"));
  CHECK(std::string((*attribute(resource_attributes, "service.name"))["stringValue"].GetString()) ==
        "my-operator");
  CHECK(std::string((*attribute(resource_attributes, "service.version"))["stringValue"].GetString()) ==
        "1.2.3");

  const auto& scope_spans = resource_spans["scopeSpans"][0];
  CHECK(std::string(scope_spans["scope"]["name"].GetString()) == "my-operator/trace");
  const auto& spans = scope_spans["spans"];
  REQUIRE(spans.Size() == 2);
  const auto& encoded = spans[0];
  CHECK(std::string(encoded["traceId"].GetString()) == span.trace_id.hex());
  CHECK(std::string(encoded["spanId"].GetString()) == span.span_id.hex());
  CHECK(std::string(encoded["parentSpanId"].GetString()) == span.parent_span_id.hex());
  CHECK(std::string(encoded["name"].GetString()) == "PATCH deployments");
  CHECK(encoded["kind"].GetInt() == 3);  // SPAN_KIND_CLIENT
  CHECK(std::string(encoded["startTimeUnixNano"].GetString()) == "1700000000123456789");
  CHECK(std::string(encoded["endTimeUnixNano"].GetString()) == "1700000000128456789");
  CHECK(encoded["status"]["code"].GetInt() == 2);  // STATUS_CODE_ERROR
  CHECK(std::string(encoded["status"]["message"].GetString()) == "HTTP 500");

  const auto& attributes = encoded["attributes"];
  CHECK(std::string((*attribute(attributes, "http.request.method"))["stringValue"].GetString()) == "PATCH");
  // int64 values are strings in the protobuf JSON mapping.
  CHECK(std::string((*attribute(attributes, "http.response.status_code"))["intValue"].GetString()) == "200");
  CHECK((*attribute(attributes, "myoperator.queue.wait_seconds"))["doubleValue"].GetDouble() == 0.25);
  CHECK((*attribute(attributes, "myoperator.trigger.initial_list"))["boolValue"].GetBool());
  CHECK(std::string((*attribute(attributes, "quote"))["stringValue"].GetString()) == "a \"b\"\n");

  const auto& encoded_root = spans[1];
  CHECK_FALSE(encoded_root.HasMember("parentSpanId"));  // a root span
  CHECK(encoded_root["kind"].GetInt() == 1);            // SPAN_KIND_INTERNAL
  CHECK(encoded_root["status"]["code"].GetInt() == 0);  // STATUS_CODE_UNSET
  CHECK_FALSE(encoded_root["status"].HasMember("message"));
}
