#pragma once
// One HTTP server's metrics (docs/design.md, "Metrics"), labelled with the server's name (`probes`,
// `metrics`, `webhook`): what a client holds (connections, buffered request bytes) and what the
// limits of runtime/http/http_server_limits.h refused. Thread-safe (prometheus-cpp's counters and gauges
// are).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <map>
#include <mutex>
#include <string>

#include "runtime/http/http_server_limits.h"

namespace myop::runtime {

class HttpServerMetrics {
 public:
  HttpServerMetrics(prometheus::Registry& registry, const std::string& server);

  void set_connections(std::size_t open);
  void set_buffered_bytes(std::size_t bytes);
  void rejected(Rejection reason);
  void answered(unsigned status);
  // An exception out of a handler or out of the server's own code; the thread went on serving.
  void exception();

 private:
  prometheus::Gauge* connections_;
  prometheus::Gauge* buffered_bytes_;
  std::array<prometheus::Counter*, std::size(kRejections)> rejected_{};
  prometheus::Family<prometheus::Counter>* requests_;
  const std::string server_;
  std::mutex requests_mutex_;
  std::map<unsigned, prometheus::Counter*> requests_by_status_;
  prometheus::Counter* exceptions_;
};

}  // namespace myop::runtime
