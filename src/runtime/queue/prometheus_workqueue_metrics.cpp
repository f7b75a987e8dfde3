#include "runtime/queue/prometheus_workqueue_metrics.h"

#include <utility>

#include "runtime/queue/cluster_series.h"

namespace myop::runtime {

prometheus::Histogram::BucketBoundaries duration_buckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 0.001; bound < 2000; bound *= 3) buckets.push_back(bound);
  return buckets;
}

PrometheusWorkQueueMetrics::PrometheusWorkQueueMetrics(prometheus::Registry& registry,
                                                       const std::string& queue_name,
                                                       ClusterNames cluster_name)
    : queue_name_(queue_name),
      cluster_name_(std::move(cluster_name)),
      depth_(prometheus::BuildGauge()
                 .Name("workqueue_depth")
                 .Help("Current depth of the work queue, by priority")
                 .Register(registry)),
      adds_(prometheus::BuildCounter()
                .Name("workqueue_adds_total")
                .Help("Total number of adds handled by the work queue")
                .Register(registry)),
      queue_duration_(prometheus::BuildHistogram()
                          .Name("workqueue_queue_duration_seconds")
                          .Help("How long an item stays in the work queue before a worker takes it")
                          .Register(registry)),
      work_duration_(prometheus::BuildHistogram()
                         .Name("workqueue_work_duration_seconds")
                         .Help("How long a worker holds an item")
                         .Register(registry)),
      retries_(prometheus::BuildCounter()
                   .Name("workqueue_retries_total")
                   .Help("Total number of retries (failures requeued with backoff)")
                   .Register(registry)),
      unfinished_work_(prometheus::BuildGauge()
                           .Name("workqueue_unfinished_work_seconds")
                           .Help("Seconds of work in progress that has not been observed by work_duration")
                           .Register(registry)),
      longest_running_(prometheus::BuildGauge()
                           .Name("workqueue_longest_running_processor_seconds")
                           .Help("Seconds the longest running worker has held its item")
                           .Register(registry)),
      local_(make_series({{"name", queue_name}})) {}

PrometheusWorkQueueMetrics::Series PrometheusWorkQueueMetrics::make_series(const prometheus::Labels& labels) {
  Series series;
  for (Priority priority : kAllPriorities) {
    prometheus::Labels with_priority = labels;
    with_priority.emplace("priority", std::string(priority_name(priority)));
    series.depth[priority_index(priority)] = &depth_.Add(with_priority);
  }
  series.adds = &adds_.Add(labels);
  series.queue_duration = &queue_duration_.Add(labels, duration_buckets());
  series.work_duration = &work_duration_.Add(labels, duration_buckets());
  series.retries = &retries_.Add(labels);
  series.unfinished_work = &unfinished_work_.Add(labels);
  series.longest_running = &longest_running_.Add(labels);
  return series;
}

PrometheusWorkQueueMetrics::Series* PrometheusWorkQueueMetrics::series(ClusterId cluster) {
  if (cluster == kLocalCluster) return &local_;
  if (auto known = members_.find(cluster); known != members_.end()) return known->second;
  const std::string name = cluster_name_ ? cluster_name_(cluster) : std::string();
  // A number nobody names (a member gone before its keys): counting it in another cluster's series
  // would be wrong, and a series per number would grow without bound.
  if (name.empty()) return nullptr;
  Series& named = member_series(members_by_name_, {{"name", queue_name_}}, name,
                                [this](const prometheus::Labels& labels) { return make_series(labels); });
  members_.emplace(cluster, &named);
  return &named;
}

void PrometheusWorkQueueMetrics::added(ClusterId cluster, Priority /*priority*/) {
  if (Series* counted = series(cluster)) counted->adds->Increment();
}
void PrometheusWorkQueueMetrics::depth_changed(ClusterId cluster, Priority priority, std::size_t depth) {
  if (Series* counted = series(cluster))
    counted->depth[priority_index(priority)]->Set(static_cast<double>(depth));
}
void PrometheusWorkQueueMetrics::queued_for(ClusterId cluster, Duration duration) {
  if (Series* counted = series(cluster)) counted->queue_duration->Observe(to_seconds(duration));
}
void PrometheusWorkQueueMetrics::worked_for(ClusterId cluster, Duration duration) {
  if (Series* counted = series(cluster)) counted->work_duration->Observe(to_seconds(duration));
}
void PrometheusWorkQueueMetrics::retried(ClusterId cluster) {
  if (Series* counted = series(cluster)) counted->retries->Increment();
}
void PrometheusWorkQueueMetrics::in_flight(ClusterId cluster, Duration unfinished_total,
                                           Duration longest_running) {
  if (Series* counted = series(cluster)) {
    counted->unfinished_work->Set(to_seconds(unfinished_total));
    counted->longest_running->Set(to_seconds(longest_running));
  }
}

}  // namespace myop::runtime
