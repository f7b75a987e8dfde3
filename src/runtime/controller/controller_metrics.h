#pragma once
// A controller's prometheus metrics, with controller-runtime's names so existing dashboards work,
// plus myoperator_event_to_reconcile_seconds (watch event seen until the reconcile that handled it
// finished). Labels never carry object names (no cardinality blow-up).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "runtime/clock.h"

namespace myop::runtime {

class ControllerMetrics {
 public:
  ControllerMetrics(prometheus::Registry& registry, const std::string& controller);

  // result: success | error | requeue | requeue_after
  void reconciled(const std::string& result, Duration took);
  void reconcile_error();
  void terminal_error();
  void panic();
  void set_max_concurrent_reconciles(int workers);
  void set_active_workers(int workers);
  void event_reconciled(Duration since_event_seen);

 private:
  prometheus::Family<prometheus::Counter>* reconcile_total_;
  prometheus::Counter* success_;
  prometheus::Counter* error_;
  prometheus::Counter* requeue_;
  prometheus::Counter* requeue_after_;
  prometheus::Counter* errors_;
  prometheus::Counter* terminal_errors_;
  prometheus::Counter* panics_;
  prometheus::Histogram* reconcile_time_;
  prometheus::Gauge* max_concurrent_;
  prometheus::Gauge* active_workers_;
  prometheus::Histogram* event_to_reconcile_;
};

}  // namespace myop::runtime
