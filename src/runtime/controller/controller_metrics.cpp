#include "runtime/controller/controller_metrics.h"

#include "runtime/queue/cluster_series.h"
#include "runtime/queue/prometheus_workqueue_metrics.h"

namespace myop::runtime {

ControllerMetrics::ControllerMetrics(prometheus::Registry& registry, const std::string& controller)
    : controller_(controller) {
  const prometheus::Labels labels{{"controller", controller}};
  reconcile_total_ = &prometheus::BuildCounter()
                          .Name("controller_runtime_reconcile_total")
                          .Help("Total number of reconciliations per controller and result")
                          .Register(registry);
  errors_ = &prometheus::BuildCounter()
                 .Name("controller_runtime_reconcile_errors_total")
                 .Help("Total number of reconciliation errors per controller")
                 .Register(registry);
  terminal_errors_ = &prometheus::BuildCounter()
                          .Name("controller_runtime_terminal_reconcile_errors_total")
                          .Help("Total number of terminal reconciliation errors per controller")
                          .Register(registry);
  panics_ = &prometheus::BuildCounter()
                 .Name("controller_runtime_reconcile_panics_total")
                 .Help("Total number of reconciliations that threw an exception, per controller")
                 .Register(registry);
  reconcile_time_ = &prometheus::BuildHistogram()
                         .Name("controller_runtime_reconcile_time_seconds")
                         .Help("Length of time per reconciliation per controller")
                         .Register(registry);
  event_to_reconcile_ = &prometheus::BuildHistogram()
                             .Name("myoperator_event_to_reconcile_seconds")
                             .Help(
                                 "Time from a watch event reaching the operator until the reconcile it "
                                 "triggered finished successfully")
                             .Register(registry);
  max_concurrent_ = &prometheus::BuildGauge()
                         .Name("controller_runtime_max_concurrent_reconciles")
                         .Help("Maximum number of concurrent reconciles per controller")
                         .Register(registry)
                         .Add(labels);
  active_workers_ = &prometheus::BuildGauge()
                         .Name("controller_runtime_active_workers")
                         .Help("Number of currently used workers per controller")
                         .Register(registry)
                         .Add(labels);
  hub_ = make_series(labels);
}

ControllerMetrics::Series ControllerMetrics::make_series(const prometheus::Labels& labels) {
  auto result = [&](const char* name) {
    prometheus::Labels with_result = labels;
    with_result.emplace("result", name);
    return &reconcile_total_->Add(with_result);
  };
  return Series{result("success"),
                result("error"),
                result("requeue"),
                result("requeue_after"),
                &errors_->Add(labels),
                &terminal_errors_->Add(labels),
                &panics_->Add(labels),
                &reconcile_time_->Add(labels, duration_buckets()),
                &event_to_reconcile_->Add(labels, duration_buckets())};
}

ControllerMetrics::Series& ControllerMetrics::series(const std::string& cluster) {
  if (cluster.empty()) return hub_;
  std::lock_guard lock(members_mutex_);
  return member_series(members_, {{"controller", controller_}}, cluster,
                       [this](const prometheus::Labels& labels) { return make_series(labels); });
}

void ControllerMetrics::reconciled(const std::string& result, Duration took, const std::string& cluster) {
  Series& counted = series(cluster);
  if (result == "success")
    counted.success->Increment();
  else if (result == "error")
    counted.error->Increment();
  else if (result == "requeue")
    counted.requeue->Increment();
  else
    counted.requeue_after->Increment();
  counted.reconcile_time->Observe(to_seconds(took));
}
void ControllerMetrics::reconcile_error(const std::string& cluster) { series(cluster).errors->Increment(); }
void ControllerMetrics::terminal_error(const std::string& cluster) {
  series(cluster).terminal_errors->Increment();
}
void ControllerMetrics::panic(const std::string& cluster) { series(cluster).panics->Increment(); }
void ControllerMetrics::set_max_concurrent_reconciles(int workers) { max_concurrent_->Set(workers); }
void ControllerMetrics::set_active_workers(int workers) { active_workers_->Set(workers); }
void ControllerMetrics::event_reconciled(Duration since_event_seen, const std::string& cluster) {
  series(cluster).event_to_reconcile->Observe(to_seconds(since_event_seen));
}

}  // namespace myop::runtime
