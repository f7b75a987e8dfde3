#include "runtime/queue/prometheus_workqueue_metrics.h"

namespace myop::runtime {

prometheus::Histogram::BucketBoundaries duration_buckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 0.001; bound < 2000; bound *= 3) buckets.push_back(bound);
  return buckets;
}

PrometheusWorkQueueMetrics::PrometheusWorkQueueMetrics(prometheus::Registry& registry,
                                                       const std::string& queue_name) {
  const prometheus::Labels name{{"name", queue_name}};
  auto& depth = prometheus::BuildGauge()
                    .Name("workqueue_depth")
                    .Help("Current depth of the work queue, by priority")
                    .Register(registry);
  for (Priority priority : kAllPriorities) {
    depth_[priority_index(priority)] =
        &depth.Add({{"name", queue_name}, {"priority", std::string(priority_name(priority))}});
  }
  adds_ = &prometheus::BuildCounter()
               .Name("workqueue_adds_total")
               .Help("Total number of adds handled by the work queue")
               .Register(registry)
               .Add(name);
  queue_duration_ = &prometheus::BuildHistogram()
                         .Name("workqueue_queue_duration_seconds")
                         .Help("How long an item stays in the work queue before a worker takes it")
                         .Register(registry)
                         .Add(name, duration_buckets());
  work_duration_ = &prometheus::BuildHistogram()
                        .Name("workqueue_work_duration_seconds")
                        .Help("How long a worker holds an item")
                        .Register(registry)
                        .Add(name, duration_buckets());
  retries_ = &prometheus::BuildCounter()
                  .Name("workqueue_retries_total")
                  .Help("Total number of retries (failures requeued with backoff)")
                  .Register(registry)
                  .Add(name);
  unfinished_work_ = &prometheus::BuildGauge()
                          .Name("workqueue_unfinished_work_seconds")
                          .Help("Seconds of work in progress that has not been observed by work_duration")
                          .Register(registry)
                          .Add(name);
  longest_running_ = &prometheus::BuildGauge()
                          .Name("workqueue_longest_running_processor_seconds")
                          .Help("Seconds the longest running worker has held its item")
                          .Register(registry)
                          .Add(name);
}

void PrometheusWorkQueueMetrics::added(Priority /*priority*/) { adds_->Increment(); }
void PrometheusWorkQueueMetrics::depth_changed(Priority priority, std::size_t depth) {
  depth_[priority_index(priority)]->Set(static_cast<double>(depth));
}
void PrometheusWorkQueueMetrics::queued_for(Duration duration) {
  queue_duration_->Observe(to_seconds(duration));
}
void PrometheusWorkQueueMetrics::worked_for(Duration duration) {
  work_duration_->Observe(to_seconds(duration));
}
void PrometheusWorkQueueMetrics::retried() { retries_->Increment(); }
void PrometheusWorkQueueMetrics::in_flight(Duration unfinished_total, Duration longest_running) {
  unfinished_work_->Set(to_seconds(unfinished_total));
  longest_running_->Set(to_seconds(longest_running));
}

}  // namespace myop::runtime
