#include "runtime/controller/controller_metrics.h"

#include "runtime/queue/prometheus_workqueue_metrics.h"

namespace myop::runtime {

ControllerMetrics::ControllerMetrics(prometheus::Registry& registry, const std::string& controller) {
  const prometheus::Labels labels{{"controller", controller}};
  reconcile_total_ = &prometheus::BuildCounter()
                          .Name("controller_runtime_reconcile_total")
                          .Help("Total number of reconciliations per controller and result")
                          .Register(registry);
  auto result = [&](const char* name) {
    return &reconcile_total_->Add({{"controller", controller}, {"result", name}});
  };
  success_ = result("success");
  error_ = result("error");
  requeue_ = result("requeue");
  requeue_after_ = result("requeue_after");
  errors_ = &prometheus::BuildCounter()
                 .Name("controller_runtime_reconcile_errors_total")
                 .Help("Total number of reconciliation errors per controller")
                 .Register(registry)
                 .Add(labels);
  terminal_errors_ = &prometheus::BuildCounter()
                          .Name("controller_runtime_terminal_reconcile_errors_total")
                          .Help("Total number of terminal reconciliation errors per controller")
                          .Register(registry)
                          .Add(labels);
  panics_ = &prometheus::BuildCounter()
                 .Name("controller_runtime_reconcile_panics_total")
                 .Help("Total number of reconciliations that threw an exception, per controller")
                 .Register(registry)
                 .Add(labels);
  reconcile_time_ = &prometheus::BuildHistogram()
                         .Name("controller_runtime_reconcile_time_seconds")
                         .Help("Length of time per reconciliation per controller")
                         .Register(registry)
                         .Add(labels, duration_buckets());
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
  event_to_reconcile_ = &prometheus::BuildHistogram()
                             .Name("myoperator_event_to_reconcile_seconds")
                             .Help(
                                 "Time from a watch event reaching the operator until the reconcile it "
                                 "triggered finished successfully")
                             .Register(registry)
                             .Add(labels, duration_buckets());
}

void ControllerMetrics::reconciled(const std::string& result, Duration took) {
  if (result == "success")
    success_->Increment();
  else if (result == "error")
    error_->Increment();
  else if (result == "requeue")
    requeue_->Increment();
  else
    requeue_after_->Increment();
  reconcile_time_->Observe(to_seconds(took));
}
void ControllerMetrics::reconcile_error() { errors_->Increment(); }
void ControllerMetrics::terminal_error() { terminal_errors_->Increment(); }
void ControllerMetrics::panic() { panics_->Increment(); }
void ControllerMetrics::set_max_concurrent_reconciles(int workers) { max_concurrent_->Set(workers); }
void ControllerMetrics::set_active_workers(int workers) { active_workers_->Set(workers); }
void ControllerMetrics::event_reconciled(Duration since_event_seen) {
  event_to_reconcile_->Observe(to_seconds(since_event_seen));
}

}  // namespace myop::runtime
