#include "runtime/controller/controller.h"

#include <algorithm>
#include <exception>

#include "base/uuid.h"
#include "runtime/logging.h"
#include "runtime/queue/prometheus_workqueue_metrics.h"

namespace myop::runtime {

namespace {

// How often the in-flight metrics (unfinished work, longest running) are refreshed while
// reconciles run, as client-go's unfinished-work loop does.
constexpr Duration kInFlightMetricsPeriod = std::chrono::milliseconds(500);

}  // namespace

Controller::Controller(ControllerOptions options, std::shared_ptr<Reconciler> reconciler)
    : options_(std::move(options)),
      reconciler_(std::move(reconciler)),
      metrics_(*options_.registry, options_.name) {
  if (options_.max_concurrent_reconciles < 1) options_.max_concurrent_reconciles = 1;
  if (!options_.clock) options_.clock = base::system_clock();
  WorkQueueOptions queue_options = options_.queue;
  queue_options.name = options_.name;
  queue_options.clock = options_.clock;
  // A member's keys count in series labelled with its name (the hub's in the usual ones).
  queue_options.metrics =
      std::make_shared<PrometheusWorkQueueMetrics>(*options_.registry, options_.name, options_.cluster_name);
  // One worker is kept for user changes (work added at high priority): behind a backlog they wait
  // for that worker, not for backlog writes to finish.
  if (queue_options.max_below_high_in_flight == 0 && options_.max_concurrent_reconciles > 1) {
    queue_options.max_below_high_in_flight = static_cast<std::size_t>(options_.max_concurrent_reconciles - 1);
  }
  queue_ = std::make_unique<WorkQueue>(std::move(queue_options));
  metrics_.set_max_concurrent_reconciles(options_.max_concurrent_reconciles);
  metrics_.set_active_workers(0);
}

Controller::~Controller() { stop(Duration::zero()); }

void Controller::watch(EventSource& source, EventMapper mapper, std::vector<Predicate> predicates) {
  sources_.push_back(&source);
  source.subscribe([this, mapper = std::move(mapper), predicates = std::move(predicates)](
                       const ObjectEvent& event) { on_event(mapper, predicates, kLocalCluster, event); });
}

void Controller::watch_cluster(ClusterId cluster, EventSource& source, EventMapper mapper,
                               std::vector<Predicate> predicates) {
  source.subscribe([this, cluster, mapper = std::move(mapper), predicates = std::move(predicates)](
                       const ObjectEvent& event) { on_event(mapper, predicates, cluster, event); });
}

void Controller::watch_primary(EventSource& source, std::vector<Predicate> predicates) {
  watch(source, enqueue_object(), std::move(predicates));
}

void Controller::watch_owned(EventSource& source, std::string owner_group, std::string owner_kind,
                             std::vector<Predicate> predicates) {
  watch(source, enqueue_controller_owner(std::move(owner_group), std::move(owner_kind)),
        std::move(predicates));
}

bool Controller::sources_synced() const {
  return std::ranges::all_of(sources_, [](const auto* source) { return source->has_synced(); });
}

void Controller::on_event(const EventMapper& mapper, const std::vector<Predicate>& predicates,
                          ClusterId cluster, const ObjectEvent& event) {
  if (!passes_all(predicates, event)) return;
  const TimePoint seen = event.seen == TimePoint{} ? options_.clock->now() : event.seen;
  for (auto& request : mapper(event)) {
    // A member's source names its cluster; a hub source's mapper may name any (an operator-wide
    // change concerns every cluster's objects).
    if (cluster != kLocalCluster) request.key.cluster = cluster;
    // Background work (initial list, resync) is not "an event seen" for the latency metric; a trace
    // still names it as the trigger.
    const bool measured = request.priority != Priority::low;
    if (measured || options_.tracer)
      restore_event_seen(request.key, {seen, event.type, event.initial_list, measured});
    queue_->add(request.key, {request.priority});
  }
}

void Controller::enqueue(const ObjectKey& key, AddOptions options) { queue_->add(key, options); }

void Controller::start() {
  std::lock_guard lock(mutex_);
  if (started_) return;
  started_ = true;
  for (int i = 0; i < options_.max_concurrent_reconciles; ++i)
    workers_.emplace_back([this] { run_worker(); });
  watchdog_ = std::jthread([this](std::stop_token stop) { run_watchdog(stop); });
  log(spdlog::level::info, "Starting workers",
      {{"controller", options_.name}, {"workerCount", std::to_string(options_.max_concurrent_reconciles)}});
}

bool Controller::stop(Duration grace) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return true;
    stopped_ = true;
  }
  queue_->shut_down();
  bool finished = true;
  {
    std::unique_lock lock(mutex_);
    options_.clock->wait_for(idle_, lock, {}, grace, [this] { return in_flight_.empty(); });
    if (!in_flight_.empty()) {
      finished = false;
      for (auto& [id, reconcile] : in_flight_) {
        log(spdlog::level::warn, "Cancelling reconcile still running at the end of the shutdown grace period",
            {{"controller", options_.name},
             {"namespace", reconcile.key.namespace_name},
             {"name", reconcile.key.name},
             {"reconcileID", id}});
        reconcile.stop.request_stop();
      }
    }
  }
  // Workers return once their (now cancelled) reconcile returns.
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  if (watchdog_.joinable()) {
    watchdog_.request_stop();
    idle_.notify_all();
    watchdog_.join();
  }
  if (started_) log(spdlog::level::info, "All workers finished", {{"controller", options_.name}});
  return finished;
}

int Controller::active_workers() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(in_flight_.size());
}

void Controller::run_worker() {
  while (auto item = queue_->get()) process(*item);
}

std::optional<Controller::PendingEvent> Controller::take_event_seen(const ObjectKey& key) {
  std::lock_guard lock(seen_mutex_);
  auto position = event_seen_.find(key);
  if (position == event_seen_.end()) return std::nullopt;
  const PendingEvent event = position->second;
  event_seen_.erase(position);
  return event;
}

// Keeps the earliest measured event (the latency metric counts from it); an unmeasured one only
// stands in until a measured one comes.
void Controller::restore_event_seen(const ObjectKey& key, const PendingEvent& event) {
  std::lock_guard lock(seen_mutex_);
  auto [position, inserted] = event_seen_.try_emplace(key, event);
  if (inserted) return;
  PendingEvent& kept = position->second;
  if (event.measured != kept.measured) {
    if (event.measured) kept = event;
  } else if (event.seen < kept.seen) {
    kept = event;
  }
}

namespace {

// As Kubernetes watch events are named; resync is our informer's periodic re-delivery.
std::string_view event_type_name(EventType type) {
  switch (type) {
    case EventType::added:
      return "ADDED";
    case EventType::updated:
      return "MODIFIED";
    case EventType::deleted:
      return "DELETED";
    case EventType::resync:
      return "RESYNC";
  }
  return "UNKNOWN";
}

}  // namespace

trace::Span Controller::start_reconcile_span(const WorkItem& item, const ReconcileRequest& request,
                                             const std::optional<PendingEvent>& trigger,
                                             TimePoint started) const {
  trace::Span span = options_.tracer->start_span("reconcile", trace::SpanKind::internal, nullptr);
  if (!span.recording()) return span;
  span.set_attribute("myoperator.controller", options_.name);
  span.set_attribute("k8s.namespace.name", item.key.namespace_name);
  span.set_attribute("myoperator.name", item.key.name);
  if (const std::string cluster = cluster_of(item.key); !cluster.empty())
    span.set_attribute("myoperator.cluster", cluster);
  span.set_attribute("myoperator.reconcile_id", request.reconcile_id);
  span.set_attribute("myoperator.priority", std::string(priority_name(item.priority)));
  span.set_attribute("myoperator.failures", item.failures);
  span.set_attribute("myoperator.queue.wait_seconds",
                     to_seconds(item.started - std::min(item.started, item.first_added)));
  if (trigger) {
    span.set_attribute("myoperator.trigger.event_type", std::string(event_type_name(trigger->type)));
    span.set_attribute("myoperator.trigger.initial_list", trigger->initial_list);
    span.set_attribute("myoperator.trigger.wait_seconds",
                       to_seconds(started - std::min(started, trigger->seen)));
  } else {
    // No event since the last reconcile: a retry, a requeue or a direct enqueue brought the key back.
    span.set_attribute("myoperator.trigger.event_type", item.failures > 0 ? "RETRY" : "REQUEUE");
  }
  return span;
}

void Controller::process(const WorkItem& item) {
  // The ticket is held until the reconcile's writes are done (shard_gate.h).
  const std::optional<ShardGate::Ticket> ticket =
      !options_.shard_gate  ? std::nullopt
      : options_.shard_unit ? options_.shard_gate->enter(options_.shard_unit(item.key))
                            : options_.shard_gate->enter(item.key.namespace_name);
  if (options_.shard_gate && !ticket) {
    take_event_seen(item.key);
    queue_->done(item, Completion::success());
    log(spdlog::level::debug, "Not this replica's shard, dropped",
        {{"controller", options_.name}, {"namespace", item.key.namespace_name}, {"name", item.key.name}});
    return;
  }
  const TimePoint started = options_.clock->now();
  ReconcileRequest request = begin_reconcile(item, started);
  const std::optional<PendingEvent> trigger = take_event_seen(item.key);

  trace::Span span;
  ReconcileResult result = ReconcileResult::done();
  if (options_.tracer) {
    span = start_reconcile_span(item, request, trigger, started);
    const trace::CurrentSpan current(*options_.tracer, span);
    result = invoke(request);
  } else {
    result = invoke(request);
  }

  const TimePoint finished = options_.clock->now();
  const ReconcileOutcome outcome = reconcile_outcome(result, item.failures, options_.conflict_requeue_delay);
  record_outcome(item, request, result, outcome, trigger, started, finished);
  if (span.recording()) {
    span.set_attribute("myoperator.result", std::string(outcome.label));
    if (outcome.span_error) span.set_status(trace::StatusCode::error, result.message());
    span.end();
  }
  queue_->done(item, outcome.completion);
  end_reconcile(request.reconcile_id);
}

ReconcileRequest Controller::begin_reconcile(const WorkItem& item, TimePoint started) {
  ReconcileRequest request;
  request.key = item.key;
  request.reconcile_id = base::random_uuid();
  request.priority = item.priority;
  request.failures = item.failures;
  request.deadline = started + options_.reconcile_timeout;
  std::lock_guard lock(mutex_);
  const bool was_idle = in_flight_.empty();
  auto& reconcile = in_flight_[request.reconcile_id];
  reconcile.key = item.key;
  reconcile.deadline = request.deadline;
  request.stop = reconcile.stop.get_token();
  metrics_.set_active_workers(static_cast<int>(in_flight_.size()));
  if (was_idle) idle_.notify_all();  // the watchdog sleeps while nothing runs
  return request;
}

void Controller::end_reconcile(const std::string& reconcile_id) {
  {
    std::lock_guard lock(mutex_);
    in_flight_.erase(reconcile_id);
    metrics_.set_active_workers(static_cast<int>(in_flight_.size()));
  }
  idle_.notify_all();
}

void Controller::record_outcome(const WorkItem& item, const ReconcileRequest& request,
                                const ReconcileResult& result, const ReconcileOutcome& outcome,
                                const std::optional<PendingEvent>& trigger, TimePoint started,
                                TimePoint finished) {
  const std::string cluster = cluster_of(item.key);
  if (outcome.error) metrics_.reconcile_error(cluster);
  if (outcome.terminal) metrics_.terminal_error(cluster);
  // controller, [cluster,] namespace, name, reconcileID, then what the line adds.
  const auto fields = [&](std::initializer_list<LogField> more) {
    std::vector<LogField> all{{"controller", options_.name}};
    if (!cluster.empty()) all.push_back({"cluster", cluster});
    all.insert(all.end(), {{"namespace", item.key.namespace_name},
                           {"name", item.key.name},
                           {"reconcileID", request.reconcile_id}});
    all.insert(all.end(), more);
    return all;
  };
  if (outcome.logged) {
    log(outcome.log_level, outcome.log_message,
        fields({{"failures", std::to_string(outcome.failures_after)}, {"error", result.message()}}));
  }
  metrics_.reconciled(std::string(outcome.label), finished - started, cluster);
  if (trigger && trigger->measured) {
    if (outcome.event_handled) {
      metrics_.event_reconciled(finished - trigger->seen, cluster);
    } else if (outcome.event_kept) {
      restore_event_seen(item.key, *trigger);  // latency keeps counting through retries
    }
  }
  if (spdlog::should_log(spdlog::level::debug)) {
    log(spdlog::level::debug, "Reconcile finished",
        fields({{"result", std::string(outcome.label)},
                {"seconds", std::to_string(to_seconds(finished - started))}}));
  }
}

std::string Controller::cluster_of(const ObjectKey& key) const {
  if (key.cluster == kLocalCluster || !options_.cluster_name) return {};
  return options_.cluster_name(key.cluster);
}

ReconcileResult Controller::invoke(const ReconcileRequest& request) {
  try {
    return reconciler_->reconcile(request);
  } catch (const std::exception& exception) {
    metrics_.panic(cluster_of(request.key));
    return ReconcileResult::error(std::string("reconciler threw an exception: ") + exception.what());
  } catch (...) {
    metrics_.panic(cluster_of(request.key));
    return ReconcileResult::error("reconciler threw a non-standard exception");
  }
}

std::optional<TimePoint> Controller::next_deadline_locked() const {
  std::optional<TimePoint> next;
  for (const auto& [id, reconcile] : in_flight_) {
    if (reconcile.stop.stop_requested()) continue;
    if (!next || reconcile.deadline < *next) next = reconcile.deadline;
  }
  return next;
}

void Controller::run_watchdog(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    const TimePoint now = options_.clock->now();
    for (auto& [id, reconcile] : in_flight_) {
      if (now >= reconcile.deadline && !reconcile.stop.stop_requested()) {
        log(spdlog::level::warn, "Reconcile deadline exceeded, cancelling it",
            {{"controller", options_.name},
             {"namespace", reconcile.key.namespace_name},
             {"name", reconcile.key.name},
             {"reconcileID", id}});
        reconcile.stop.request_stop();
      }
    }
    lock.unlock();
    queue_->publish_in_flight_metrics();
    lock.lock();
    if (stop.stop_requested()) break;
    // While reconciles run: until the next deadline or metrics refresh. While none runs there is
    // nothing to check, until the first one starts (process() notifies).
    const bool idle = in_flight_.empty();
    TimePoint wake_at = TimePoint::max();
    if (!idle) {
      wake_at = now + kInFlightMetricsPeriod;
      if (auto deadline = next_deadline_locked()) wake_at = std::min(wake_at, *deadline);
    }
    options_.clock->wait_until(idle_, lock, stop, wake_at, [&] { return idle && !in_flight_.empty(); });
  }
}

}  // namespace myop::runtime
