#pragma once
// WorkQueueMetrics on a prometheus registry, with client-go's metric names so existing
// dashboards work: workqueue_depth{name,priority}, workqueue_adds_total{name},
// workqueue_queue_duration_seconds{name}, workqueue_work_duration_seconds{name},
// workqueue_retries_total{name}, workqueue_unfinished_work_seconds{name},
// workqueue_longest_running_processor_seconds{name}.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <string>

#include "runtime/queue/workqueue_metrics.h"

namespace myop::runtime {

class PrometheusWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  PrometheusWorkQueueMetrics(prometheus::Registry& registry, const std::string& queue_name);

  void added(Priority priority) override;
  void depth_changed(Priority priority, std::size_t depth) override;
  void queued_for(Duration duration) override;
  void worked_for(Duration duration) override;
  void retried() override;
  void in_flight(Duration unfinished_total, Duration longest_running) override;

 private:
  std::array<prometheus::Gauge*, 3> depth_{};
  prometheus::Counter* adds_;
  prometheus::Histogram* queue_duration_;
  prometheus::Histogram* work_duration_;
  prometheus::Counter* retries_;
  prometheus::Gauge* unfinished_work_;
  prometheus::Gauge* longest_running_;
};

// 1 ms .. ~1000 s in powers of ~3: covers a hot reconcile up to a stuck one.
prometheus::Histogram::BucketBoundaries duration_buckets();

}  // namespace myop::runtime
