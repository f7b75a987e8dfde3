#include "kube/request_span.h"

#include <catch2/catch.hpp>

#include "trace/recording_exporter.h"

using namespace myop::kube;
using namespace std::chrono_literals;

TEST_CASE("API paths are taken apart into group, namespace, resource, name, subresource", "[kube][trace]") {
  ApiPath path = parse_api_path("/apis/apps/v1/namespaces/team-a/deployments/web/status");
  CHECK(path.group == "apps");
  CHECK(path.version == "v1");
  CHECK(path.namespace_name == "team-a");
  CHECK(path.resource == "deployments");
  CHECK(path.name == "web");
  CHECK(path.subresource == "status");

  path = parse_api_path("/api/v1/namespaces/team-a/configmaps?labelSelector=a%3Db");
  CHECK(path.group.empty());
  CHECK(path.version == "v1");
  CHECK(path.namespace_name == "team-a");
  CHECK(path.resource == "configmaps");
  CHECK(path.name.empty());

  path = parse_api_path("/api/v1/namespaces/team-a");  // the Namespace itself
  CHECK(path.namespace_name.empty());
  CHECK(path.resource == "namespaces");
  CHECK(path.name == "team-a");

  path = parse_api_path("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/myresources.myorg.io");
  CHECK(path.group == "apiextensions.k8s.io");
  CHECK(path.resource == "customresourcedefinitions");
  CHECK(path.name == "myresources.myorg.io");

  CHECK(parse_api_path("/healthz").resource.empty());
}

TEST_CASE("a request span carries the HTTP client attributes, under the current span only", "[kube][trace]") {
  auto exporter = std::make_shared<myop::testing::RecordingExporter>();
  auto processor =
      std::make_shared<myop::trace::BatchSpanProcessor>(exporter, myop::trace::BatchOptions{}, nullptr);
  myop::trace::Tracer tracer(myop::trace::RatioSampler(1.0), processor);

  auto outside = start_request_span("GET", "/api/v1/namespaces/a/pods", "10.0.0.1:6443");
  CHECK_FALSE(outside.context().valid());  // no current span (a watch thread): nothing at all
  {
    myop::trace::Span root = tracer.start_span("reconcile", myop::trace::SpanKind::internal, nullptr);
    const myop::trace::CurrentSpan scope(tracer, root);
    auto patch =
        start_request_span("PATCH", "/apis/apps/v1/namespaces/team-a/deployments/web", "10.0.0.1:6443");
    end_request_span(patch, 200, 1, {}, {});
    auto failed = start_request_span(
        "PUT", "/apis/myorg.io/v1alpha1/namespaces/team-a/myresources/web/status", "10.0.0.1:6443");
    end_request_span(failed, 0, 2, "Timeout", "no answer within 30000 ms");
  }
  processor->shutdown(10s);
  const auto spans = exporter->spans();
  REQUIRE(spans.size() == 3);
  const auto value = [](const myop::trace::SpanData& span, const std::string& key) {
    for (const auto& attribute : span.attributes)
      if (attribute.key == key) return attribute.value;
    FAIL("no attribute " << key);
    return myop::trace::AttributeValue{};
  };
  const auto& patch = spans[0];
  CHECK(patch.name == "PATCH deployments");
  CHECK(patch.kind == myop::trace::SpanKind::client);
  CHECK(patch.parent_span_id == spans[2].span_id);
  CHECK(std::get<std::string>(value(patch, "http.request.method")) == "PATCH");
  CHECK(std::get<std::int64_t>(value(patch, "http.response.status_code")) == 200);
  CHECK(std::get<std::int64_t>(value(patch, "http.request.resend_count")) == 1);
  CHECK(std::get<std::string>(value(patch, "server.address")) == "10.0.0.1");
  CHECK(std::get<std::int64_t>(value(patch, "server.port")) == 6443);
  CHECK(std::get<std::string>(value(patch, "k8s.namespace.name")) == "team-a");
  CHECK(std::get<std::string>(value(patch, "myoperator.api.group")) == "apps");
  CHECK(std::get<std::string>(value(patch, "myoperator.api.resource")) == "deployments");
  CHECK(patch.status == myop::trace::StatusCode::unset);

  const auto& failed = spans[1];
  CHECK(failed.name == "PUT myresources/status");
  CHECK(std::get<std::string>(value(failed, "myoperator.api.subresource")) == "status");
  CHECK(std::get<std::string>(value(failed, "error.type")) == "Timeout");
  CHECK(failed.status == myop::trace::StatusCode::error);
  CHECK(failed.status_message == "no answer within 30000 ms");
}
