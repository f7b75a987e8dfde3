#include "kube/request_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace myop::kube {
namespace {

// Buckets of client-go's rest_client_request_duration_seconds.
prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
}

class PrometheusRequestMetrics final : public RequestMetricsObserver {
 public:
  explicit PrometheusRequestMetrics(prometheus::Registry& registry)
      : requests_(prometheus::BuildCounter()
                      .Name("rest_client_requests_total")
                      .Help("Number of HTTP requests, partitioned by status code, method, and host.")
                      .Register(registry)),
        latency_(prometheus::BuildHistogram()
                     .Name("rest_client_request_duration_seconds")
                     .Help("Request latency in seconds, broken down by verb and host.")
                     .Register(registry)),
        rate_limiter_(prometheus::BuildHistogram()
                          .Name("rest_client_rate_limiter_duration_seconds")
                          .Help("Client-side rate limiter latency in seconds, broken down by verb and host.")
                          .Register(registry)),
        received_(prometheus::BuildCounter()
                      .Name("myoperator_api_received_bytes_total")
                      .Help("Body bytes received from the API server: kind=watch for watch streams "
                            "(their initial lists included), kind=response for every other answer.")
                      .Register(registry)),
        received_watch_(received_.Add({{"kind", "watch"}})),
        received_response_(received_.Add({{"kind", "response"}})) {}

  void observe(const RequestObservation& observation) override {
    requests_
        .Add({{"code", std::string(observation.code)},
              {"method", std::string(observation.method)},
              {"host", std::string(observation.host)}})
        .Increment();
    latency_
        .Add({{"verb", std::string(observation.method)}, {"host", std::string(observation.host)}},
             latency_buckets())
        .Observe(observation.latency.count());
  }

  void observe_rate_limiter_wait(std::string_view method, std::string_view host,
                                 std::chrono::duration<double> wait) override {
    rate_limiter_.Add({{"verb", std::string(method)}, {"host", std::string(host)}}, latency_buckets())
        .Observe(wait.count());
  }

  void observe_received_bytes(ReceivedKind kind, std::size_t bytes) override {
    (kind == ReceivedKind::stream ? received_watch_ : received_response_)
        .Increment(static_cast<double>(bytes));
  }

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Histogram>& rate_limiter_;
  prometheus::Family<prometheus::Counter>& received_;
  prometheus::Counter& received_watch_;
  prometheus::Counter& received_response_;
};

}  // namespace

std::shared_ptr<RequestMetricsObserver> make_prometheus_request_metrics(prometheus::Registry& registry) {
  return std::make_shared<PrometheusRequestMetrics>(registry);
}

}  // namespace myop::kube
