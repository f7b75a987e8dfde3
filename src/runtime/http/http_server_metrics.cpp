#include "runtime/http/http_server_metrics.h"

namespace myop::runtime {

HttpServerMetrics::HttpServerMetrics(prometheus::Registry& registry, const std::string& server)
    : server_(server) {
  const prometheus::Labels labels{{"server", server}};
  connections_ = &prometheus::BuildGauge()
                      .Name("myoperator_http_connections")
                      .Help("Connections open now, by server")
                      .Register(registry)
                      .Add(labels);
  buffered_bytes_ = &prometheus::BuildGauge()
                         .Name("myoperator_http_buffered_request_bytes")
                         .Help("Request body bytes reserved now (read or being read), by server")
                         .Register(registry)
                         .Add(labels);
  auto& rejected =
      prometheus::BuildCounter()
          .Name("myoperator_http_requests_rejected_total")
          .Help("Requests and connections a server's limits refused or cut, by server and reason")
          .Register(registry);
  for (const Rejection reason : kRejections) {
    rejected_[static_cast<std::size_t>(reason)] =
        &rejected.Add({{"server", server}, {"reason", std::string(rejection_label(reason))}});
  }
  requests_ = &prometheus::BuildCounter()
                   .Name("myoperator_http_requests_total")
                   .Help("Requests answered, by server and HTTP status")
                   .Register(registry);
  exceptions_ = &prometheus::BuildCounter()
                     .Name("myoperator_http_exceptions_total")
                     .Help(
                         "Exceptions caught while serving (a handler's, answered 500, or the server's own); "
                         "the thread went on serving")
                     .Register(registry)
                     .Add(labels);
}

void HttpServerMetrics::set_connections(std::size_t open) { connections_->Set(static_cast<double>(open)); }

void HttpServerMetrics::set_buffered_bytes(std::size_t bytes) {
  buffered_bytes_->Set(static_cast<double>(bytes));
}

void HttpServerMetrics::rejected(Rejection reason) {
  rejected_[static_cast<std::size_t>(reason)]->Increment();
}

void HttpServerMetrics::answered(unsigned status) {
  prometheus::Counter* counter = nullptr;
  {
    std::lock_guard lock(requests_mutex_);
    auto& slot = requests_by_status_[status];
    if (slot == nullptr) slot = &requests_->Add({{"server", server_}, {"code", std::to_string(status)}});
    counter = slot;
  }
  counter->Increment();
}

void HttpServerMetrics::exception() { exceptions_->Increment(); }

}  // namespace myop::runtime
