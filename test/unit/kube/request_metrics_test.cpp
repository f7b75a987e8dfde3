#include "kube/request_metrics.h"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <catch2/catch.hpp>

using namespace myop::kube;
using namespace std::chrono_literals;

TEST_CASE("request observations become rest_client_* metrics with bounded labels", "[kube][metrics]") {
  prometheus::Registry registry;
  auto metrics = make_prometheus_request_metrics(registry);
  metrics->observe({"GET", "10.0.0.1:443", "200", 20ms});
  metrics->observe({"GET", "10.0.0.1:443", "200", 30ms});
  metrics->observe({"PATCH", "10.0.0.1:443", "429", 1ms});
  metrics->observe({"GET", "10.0.0.1:443", "<error>", 2s});
  metrics->observe_rate_limiter_wait("GET", "10.0.0.1:443", 5ms);
  metrics->observe_received_bytes(ReceivedKind::stream, 1000);
  metrics->observe_received_bytes(ReceivedKind::stream, 24);
  metrics->observe_received_bytes(ReceivedKind::response, 7);

  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  INFO(text);
  CHECK(text.find(R"(rest_client_requests_total{code="200",host="10.0.0.1:443",method="GET"} 2)") !=
        std::string::npos);
  CHECK(text.find(R"(rest_client_requests_total{code="429",host="10.0.0.1:443",method="PATCH"} 1)") !=
        std::string::npos);
  CHECK(text.find(R"(rest_client_requests_total{code="<error>",host="10.0.0.1:443",method="GET"} 1)") !=
        std::string::npos);
  CHECK(text.find(R"(rest_client_request_duration_seconds_count{host="10.0.0.1:443",verb="GET"} 3)") !=
        std::string::npos);
  CHECK(text.find(R"(rest_client_rate_limiter_duration_seconds_count{host="10.0.0.1:443",verb="GET"} 1)") !=
        std::string::npos);
  CHECK(text.find(R"(myoperator_api_received_bytes_total{kind="watch"} 1024)") != std::string::npos);
  CHECK(text.find(R"(myoperator_api_received_bytes_total{kind="response"} 7)") != std::string::npos);
}
