#pragma once
// What the work queue reports. An interface so the queue does not depend on prometheus and tests
// can observe it; PrometheusWorkQueueMetrics is the production implementation.
#include <cstddef>

#include "runtime/clock.h"
#include "runtime/queue/priority.h"

namespace myop::runtime {

class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  virtual void added(Priority priority) = 0;
  virtual void depth_changed(Priority priority, std::size_t depth) = 0;
  // Time from the first add of a key until a worker took it.
  virtual void queued_for(Duration duration) = 0;
  // Time a worker held a key.
  virtual void worked_for(Duration duration) = 0;
  virtual void retried() = 0;
  // Sum of the ages of all in-flight items, and the age of the oldest one.
  virtual void in_flight(Duration unfinished_total, Duration longest_running) = 0;
};

class NullWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  void added(Priority /*priority*/) override {}
  void depth_changed(Priority /*priority*/, std::size_t /*depth*/) override {}
  void queued_for(Duration /*duration*/) override {}
  void worked_for(Duration /*duration*/) override {}
  void retried() override {}
  void in_flight(Duration /*unfinished_total*/, Duration /*longest_running*/) override {}
};

}  // namespace myop::runtime
