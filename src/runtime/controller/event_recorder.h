#pragma once
// Kubernetes Events (events.k8s.io/v1) for state changes, as client-go's events broadcaster does:
//
// - record() never blocks a reconcile: events go to a bounded queue that one thread posts.
// - The first occurrence creates an Event (eventTime, reportingController, reportingInstance,
//   action, reason, regarding, note, type). Repeats of the same (regarding, type, reason, action,
//   note) within `series_window` are aggregated: the Event gets `series` {count, lastObservedTime},
//   patched at most once per `series_flush_interval` per series. The posting thread sleeps until
//   an event is recorded or the next series update is due.
// - Creates and patches share a token bucket (burst 25, then `qps`), so an event storm cannot
//   flood the API server; what does not fit is dropped, counted in event_recorder_dropped_total
//   {reason="rate_limit"|"queue_full"} and summarised in at most one log line per
//   `drop_report_interval` (a storm of thousands of drops is one warning, not thousands).
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/token_bucket.h"
#include "kube/client.h"
#include "kube/object.h"
#include "runtime/clock.h"

namespace myop::runtime {

enum class EventSeverity { normal, warning };

struct EventRecorderOptions {
  // Event.reportingController, e.g. "myorg.io/my-operator"; required.
  std::string reporting_controller;
  // Default: the host name.
  std::string reporting_instance;
  Duration series_window = std::chrono::minutes(6);
  Duration series_flush_interval = std::chrono::seconds(30);
  double qps = 1.0 / 5;
  int burst = 25;
  std::size_t max_queued = 1000;
  // Drops are summarised in one log line at most this often.
  Duration drop_report_interval = std::chrono::minutes(1);
  // Where event_recorder_dropped_total is registered; none: the drops are only logged.
  std::shared_ptr<prometheus::Registry> registry;
  // Event times (wall_now), series windows, flushes and the rate limit run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// What the Event is about (Event.regarding).
struct EventSubject {
  std::string api_version;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;

  static EventSubject of(const kube::Object& object);
};

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<kube::Client> client, EventRecorderOptions options = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // reason: CamelCase (e.g. CanaryFailed); action: what the operator did (e.g. Reconcile).
  void record(const EventSubject& regarding, EventSeverity severity, std::string reason, std::string action,
              std::string note);

  // Posts everything queued and every pending series update now (tests, shutdown).
  void flush();

 private:
  struct Pending {
    EventSubject regarding;
    EventSeverity severity = EventSeverity::normal;
    std::string reason;
    std::string action;
    std::string note;
    base::WallTime observed;
  };
  struct Series {
    std::string event_name;
    std::string namespace_name;
    int count = 1;
    int posted_count = 1;
    base::WallTime last_observed;
    TimePoint last_flush;
    TimePoint first_seen;
  };

  void run(std::stop_token stop);
  // The oldest queued event, taken off the queue; nullopt when it is empty.
  std::optional<Pending> take_queued();
  void post(const Pending& pending);
  void flush_series(bool all);
  // When the next series update is due (not before a token is free); max() when none is pending.
  TimePoint next_series_flush_locked(TimePoint now);
  bool take_token();
  enum class DropReason { rate_limit, queue_full };
  void count_drop_locked(DropReason reason);
  // The drop summary, when there are unreported drops and the last one is drop_report_interval old.
  void report_drops(TimePoint now, bool force);
  static std::string series_key(const Pending& pending);

  std::shared_ptr<kube::Client> client_;
  EventRecorderOptions options_;
  base::TokenBucket bucket_;
  prometheus::Counter* dropped_by_rate_limit_ = nullptr;
  prometheus::Counter* dropped_by_full_queue_ = nullptr;
  std::mutex mutex_;       // queue_, series_, dropped_, reported_dropped_, last_drop_report_
  std::mutex work_mutex_;  // one poster at a time (the thread or flush())
  std::condition_variable_any wake_;
  std::deque<Pending> queue_;
  std::map<std::string, Series> series_;
  std::size_t dropped_ = 0;
  std::size_t reported_dropped_ = 0;
  TimePoint last_drop_report_{};
  std::jthread thread_;
};

}  // namespace myop::runtime
