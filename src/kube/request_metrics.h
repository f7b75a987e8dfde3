// Metrics hooks for every HTTP request the client makes. The transport calls the observer; the runtime
// registers an implementation with its prometheus-cpp registry (PrometheusRequestMetrics below is the
// standard one). Labels are bounded: method, host, code. No per-object values.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
}

namespace myop::kube {

struct RequestObservation {
  std::string_view method;  // GET, POST, ...
  std::string_view host;    // host:port of the API server
  std::string_view code;    // "200", "429", or "<error>" when no HTTP answer came (client-go's label)
  std::chrono::duration<double> latency;  // one attempt, rate-limiter wait excluded
};

enum class ReceivedKind { stream, response };

class RequestMetricsObserver {
 public:
  virtual ~RequestMetricsObserver() = default;
  virtual void observe(const RequestObservation& observation) = 0;
  // Time spent waiting for the client-side rate limiter (client-go: rest_client_rate_limiter_duration).
  virtual void observe_rate_limiter_wait(std::string_view method, std::string_view host,
                                         std::chrono::duration<double> wait) {
    (void)method, (void)host, (void)wait;
  }
  // Body bytes received: `stream` for a watch (its initial list included), else one response. Called
  // per chunk on a stream, so implementations keep it to an atomic add.
  virtual void observe_received_bytes(ReceivedKind kind, std::size_t bytes) { (void)kind, (void)bytes; }
};

// rest_client_requests_total{code,method,host}, rest_client_request_duration_seconds{verb,host} and
// rest_client_rate_limiter_duration_seconds{verb,host}, the names controller-runtime exposes, and our
// myoperator_api_received_bytes_total{kind="watch"|"response"}.
std::shared_ptr<RequestMetricsObserver> make_prometheus_request_metrics(prometheus::Registry& registry);

}  // namespace myop::kube
