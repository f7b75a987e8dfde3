#pragma once
// A controller's prometheus metrics, with controller-runtime's names so existing dashboards work,
// plus myoperator_event_to_reconcile_seconds (watch event seen until the reconcile that handled it
// finished). Labels never carry object names (no cardinality blow-up).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <string>

#include "runtime/clock.h"

namespace myop::runtime {

class ControllerMetrics {
 public:
  ControllerMetrics(prometheus::Registry& registry, const std::string& controller);

  // `cluster`: "" for the hub (the series carry no cluster label, as without a fleet); a member's name
  // for a member of a fleet (runtime/fleet/fleet.h): its series carry cluster="<name>", made on first use.
  // result: success | error | requeue | requeue_after
  void reconciled(const std::string& result, Duration took, const std::string& cluster = {});
  void reconcile_error(const std::string& cluster = {});
  void terminal_error(const std::string& cluster = {});
  void panic(const std::string& cluster = {});
  void set_max_concurrent_reconciles(int workers);
  void set_active_workers(int workers);
  void event_reconciled(Duration since_event_seen, const std::string& cluster = {});

 private:
  // One cluster's series.
  struct Series {
    prometheus::Counter* success;
    prometheus::Counter* error;
    prometheus::Counter* requeue;
    prometheus::Counter* requeue_after;
    prometheus::Counter* errors;
    prometheus::Counter* terminal_errors;
    prometheus::Counter* panics;
    prometheus::Histogram* reconcile_time;
    prometheus::Histogram* event_to_reconcile;
  };
  Series make_series(const prometheus::Labels& labels);
  Series& series(const std::string& cluster);

  std::string controller_;
  prometheus::Family<prometheus::Counter>* reconcile_total_;
  prometheus::Family<prometheus::Counter>* errors_;
  prometheus::Family<prometheus::Counter>* terminal_errors_;
  prometheus::Family<prometheus::Counter>* panics_;
  prometheus::Family<prometheus::Histogram>* reconcile_time_;
  prometheus::Family<prometheus::Histogram>* event_to_reconcile_;
  prometheus::Gauge* max_concurrent_;
  prometheus::Gauge* active_workers_;
  Series hub_;
  std::mutex members_mutex_;
  std::map<std::string, Series, std::less<>> members_;
};

}  // namespace myop::runtime
