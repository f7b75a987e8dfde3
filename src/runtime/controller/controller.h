#pragma once
// A controller: event sources -> mappers and predicates -> work queue -> a pool of reconcile
// workers. Level-triggered like controller-runtime: events only say which key to look at.
//
// - At most `max_concurrent_reconciles` reconciles run at once, never two for one key.
// - With more than one worker, one is kept for work added at high priority (user changes): the
//   queue's max_below_high_in_flight defaults to the workers minus one.
// - A reconcile gets a deadline; when it passes on the controller's clock, the request's stop token
//   is triggered (the kube client honours it) and the worker is expected to return an error soon
//   after.
// - A 409 Conflict (the cache was behind) is requeued shortly, not counted as a failure.
// - An exception from the reconciler is counted (controller_runtime_reconcile_panics_total),
//   logged and retried with backoff; it never escapes a worker.
// - stop() stops taking work, lets in-flight reconciles finish within a grace period, then cancels.
// - With a shard gate (--sharding), a key is reconciled only under a ticket for its namespace's slot;
//   a key of a slot this replica does not own (now) is dropped: the slot's new owner lists it.
// - With a tracer, each reconcile is the root span of a trace (`reconcile`: key, result, queue wait,
//   the trigger: the first watch event since the last reconcile and how long it waited), current on
//   the worker thread while the reconciler runs, so its API calls are child spans. No tracer: no spans.
#include <prometheus/registry.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "runtime/cache/object_event.h"
#include "runtime/clock.h"
#include "runtime/controller/controller_metrics.h"
#include "runtime/controller/event_handler.h"
#include "runtime/controller/predicate.h"
#include "runtime/controller/reconcile_outcome.h"
#include "runtime/controller/reconciler.h"
#include "runtime/queue/workqueue.h"
#include "runtime/sharding/shard_gate.h"
#include "trace/tracer.h"

namespace myop::runtime {

struct ControllerOptions {
  std::string name = "controller";
  int max_concurrent_reconciles = 4;
  Duration reconcile_timeout = std::chrono::minutes(1);
  // A reconcile that ended in 409 Conflict is looked at again after this, without backoff.
  Duration conflict_requeue_delay = std::chrono::milliseconds(100);
  // Queue tuning; its name, clock and metrics are set by the controller.
  WorkQueueOptions queue{};
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  // Null: every key is this replica's to reconcile.
  std::shared_ptr<ShardGate> shard_gate;
  // What names a key's unit of work for the shard gate: its namespace when unset; a fleet member's
  // keys are all of one unit (runtime/fleet/fleet.h, member_shard_unit).
  std::function<std::string(const ObjectKey& key)> shard_unit;
  // The name of a fleet member by its id (runtime/fleet/fleet.h), for the `cluster` label of the
  // reconcile and work queue metrics (called with the queue's lock held: it takes no lock held while
  // adding to the queue), the `cluster` field of the reconcile logs and the `myoperator.cluster` attribute
  // of reconcile spans; unset, or "" for an id: none (the hub's keys never have one).
  std::function<std::string(ClusterId cluster)> cluster_name;
  // Reconcile deadlines, the shutdown grace period and the work queue run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Null: tracing off.
  std::shared_ptr<trace::Tracer> tracer{};
};

class Controller {
 public:
  Controller(ControllerOptions options, std::shared_ptr<Reconciler> reconciler);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Watches; call before start(). The source must outlive the controller.
  void watch(EventSource& source, EventMapper mapper, std::vector<Predicate> predicates = {});
  // A member cluster's source (runtime/fleet/fleet.h), at any time: its keys carry `cluster`. It is not
  // one of the sources sources_synced() waits for, and it must stop calling before it goes away.
  void watch_cluster(ClusterId cluster, EventSource& source, EventMapper mapper,
                     std::vector<Predicate> predicates = {});
  // The primary kind (For()).
  void watch_primary(EventSource& source, std::vector<Predicate> predicates = {});
  // A kind whose controller owner is of the primary kind (Owns()).
  void watch_owned(EventSource& source, std::string owner_group, std::string owner_kind,
                   std::vector<Predicate> predicates = {});

  bool sources_synced() const;

  // Direct enqueue (e.g. from a timer). Ignored after stop().
  void enqueue(const ObjectKey& key, AddOptions options = {});

  void start();
  // Returns true when every in-flight reconcile finished within `grace`.
  bool stop(Duration grace = std::chrono::seconds(30));

  const std::string& name() const { return options_.name; }
  WorkQueue& queue() { return *queue_; }
  int active_workers() const;

 private:
  // The first event that queued a key since its last reconcile began: the reconcile's trigger.
  // `measured` events (not the initial list, not a resync) feed myoperator_event_to_reconcile_seconds;
  // the others are kept only for the trace.
  struct PendingEvent {
    TimePoint seen;
    EventType type = EventType::added;
    bool initial_list = false;
    bool measured = true;
  };

  struct InFlight {
    ObjectKey key;
    std::stop_source stop;
    TimePoint deadline;
  };

  void on_event(const EventMapper& mapper, const std::vector<Predicate>& predicates, ClusterId cluster,
                const ObjectEvent& event);
  void run_worker();
  // One work item: the shard gate, then begin_reconcile, the reconciler (in its span), the outcome
  // (reconcile_outcome.h) recorded and handed to the queue, end_reconcile.
  void process(const WorkItem& item);
  // In-flight bookkeeping: the request (id, deadline, stop token) and the active-worker gauge.
  ReconcileRequest begin_reconcile(const WorkItem& item, TimePoint started);
  void end_reconcile(const std::string& reconcile_id);
  // Metrics, the trigger's latency and the logs of one finished reconcile.
  void record_outcome(const WorkItem& item, const ReconcileRequest& request, const ReconcileResult& result,
                      const ReconcileOutcome& outcome, const std::optional<PendingEvent>& trigger,
                      TimePoint started, TimePoint finished);
  ReconcileResult invoke(const ReconcileRequest& request);
  // cluster_name of a member key's cluster; "" for the hub's.
  std::string cluster_of(const ObjectKey& key) const;
  void run_watchdog(std::stop_token stop);
  // The earliest deadline of a reconcile not yet cancelled.
  std::optional<TimePoint> next_deadline_locked() const;
  std::optional<PendingEvent> take_event_seen(const ObjectKey& key);
  void restore_event_seen(const ObjectKey& key, const PendingEvent& event);
  trace::Span start_reconcile_span(const WorkItem& item, const ReconcileRequest& request,
                                   const std::optional<PendingEvent>& trigger, TimePoint started) const;

  ControllerOptions options_;
  std::shared_ptr<Reconciler> reconciler_;
  ControllerMetrics metrics_;
  std::unique_ptr<WorkQueue> queue_;
  std::vector<EventSource*> sources_;

  mutable std::mutex mutex_;
  // Notified when a reconcile starts or finishes (the watchdog and stop() wait on it).
  std::condition_variable_any idle_;
  std::unordered_map<std::string, InFlight> in_flight_;  // by reconcile id
  bool started_ = false;
  bool stopped_ = false;

  std::mutex seen_mutex_;
  std::unordered_map<ObjectKey, PendingEvent, ObjectKeyHash> event_seen_;

  std::vector<std::thread> workers_;
  std::jthread watchdog_;
};

}  // namespace myop::runtime
