#pragma once
// What the work queue reports. An interface so the queue does not depend on prometheus and tests
// can observe it; PrometheusWorkQueueMetrics is the production implementation.
//
// Every figure names the cluster of the keys it counts (kLocalCluster for the operator's own, and for
// every key without a fleet), so that a member's backlog or stuck worker shows as that member's.
// The queue calls these with its lock held: an implementation must not call back into the queue or
// take a lock that is held while adding to it.
#include <cstddef>

#include "runtime/clock.h"
#include "runtime/queue/object_key.h"
#include "runtime/queue/priority.h"

namespace myop::runtime {

class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  virtual void added(ClusterId cluster, Priority priority) = 0;
  // The cluster's waiting keys at that priority.
  virtual void depth_changed(ClusterId cluster, Priority priority, std::size_t depth) = 0;
  // Time from the first add of a key until a worker took it.
  virtual void queued_for(ClusterId cluster, Duration duration) = 0;
  // Time a worker held a key.
  virtual void worked_for(ClusterId cluster, Duration duration) = 0;
  virtual void retried(ClusterId cluster) = 0;
  // Sum of the ages of the cluster's in-flight items, and the age of the oldest one (zeros once it
  // has none left).
  virtual void in_flight(ClusterId cluster, Duration unfinished_total, Duration longest_running) = 0;
};

class NullWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  void added(ClusterId /*cluster*/, Priority /*priority*/) override {}
  void depth_changed(ClusterId /*cluster*/, Priority /*priority*/, std::size_t /*depth*/) override {}
  void queued_for(ClusterId /*cluster*/, Duration /*duration*/) override {}
  void worked_for(ClusterId /*cluster*/, Duration /*duration*/) override {}
  void retried(ClusterId /*cluster*/) override {}
  void in_flight(ClusterId /*cluster*/, Duration /*unfinished_total*/,
                 Duration /*longest_running*/) override {}
};

}  // namespace myop::runtime
