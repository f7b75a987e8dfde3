#pragma once
// WorkQueueMetrics on a prometheus registry, with client-go's metric names so existing
// dashboards work: workqueue_depth{name,priority}, workqueue_adds_total{name},
// workqueue_queue_duration_seconds{name}, workqueue_work_duration_seconds{name},
// workqueue_retries_total{name}, workqueue_unfinished_work_seconds{name},
// workqueue_longest_running_processor_seconds{name}.
//
// The operator's own cluster's keys count in those series, as without a fleet; a member cluster's
// keys in series of their own that add cluster="<member name>" (runtime/queue/cluster_series.h),
// made when the member's first key arrives. Summing over `cluster` gives the queue's totals.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include "runtime/queue/workqueue_metrics.h"

namespace myop::runtime {

class PrometheusWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  // `cluster_name` names a member cluster's number ("" when it does not know it: that cluster's keys
  // are then not counted until it does). The queue calls with its lock held, so it must take no lock
  // that is held while adding to the queue (runtime::Fleet::name_of takes only its own leaf lock).
  using ClusterNames = std::function<std::string(ClusterId cluster)>;

  PrometheusWorkQueueMetrics(prometheus::Registry& registry, const std::string& queue_name,
                             ClusterNames cluster_name = {});

  void added(ClusterId cluster, Priority priority) override;
  void depth_changed(ClusterId cluster, Priority priority, std::size_t depth) override;
  void queued_for(ClusterId cluster, Duration duration) override;
  void worked_for(ClusterId cluster, Duration duration) override;
  void retried(ClusterId cluster) override;
  void in_flight(ClusterId cluster, Duration unfinished_total, Duration longest_running) override;

 private:
  // One cluster's series.
  struct Series {
    std::array<prometheus::Gauge*, 3> depth{};
    prometheus::Counter* adds = nullptr;
    prometheus::Histogram* queue_duration = nullptr;
    prometheus::Histogram* work_duration = nullptr;
    prometheus::Counter* retries = nullptr;
    prometheus::Gauge* unfinished_work = nullptr;
    prometheus::Gauge* longest_running = nullptr;
  };

  Series make_series(const prometheus::Labels& labels);
  // nullptr for a cluster that has no name (yet).
  Series* series(ClusterId cluster);

  std::string queue_name_;
  ClusterNames cluster_name_;
  prometheus::Family<prometheus::Gauge>& depth_;
  prometheus::Family<prometheus::Counter>& adds_;
  prometheus::Family<prometheus::Histogram>& queue_duration_;
  prometheus::Family<prometheus::Histogram>& work_duration_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Gauge>& unfinished_work_;
  prometheus::Family<prometheus::Gauge>& longest_running_;
  Series local_;
  // Members' series. Unguarded: the queue calls with its lock held, one call at a time.
  std::unordered_map<ClusterId, Series*> members_;              // by number, as the queue reports
  std::map<std::string, Series, std::less<>> members_by_name_;  // by name (runtime/queue/cluster_series.h)
};

// 1 ms .. ~1000 s in powers of ~3: covers a hot reconcile up to a stuck one.
prometheus::Histogram::BucketBoundaries duration_buckets();

}  // namespace myop::runtime
