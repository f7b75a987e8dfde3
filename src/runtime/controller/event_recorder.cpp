#include "runtime/controller/event_recorder.h"

#include <optional>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "base/time_format.h"
#include "kube/resource.h"
#include "runtime/logging.h"

namespace myop::runtime {

namespace {

constexpr std::size_t kMaximumNoteBytes = 1024;  // the API server refuses longer notes

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

std::string event_namespace(const EventSubject& regarding) {
  return regarding.namespace_name.empty() ? "default" : regarding.namespace_name;
}

}  // namespace

EventSubject EventSubject::of(const kube::Object& object) {
  const auto view = object.view();
  return {std::string(view.api_version()), std::string(view.kind()), std::string(view.namespace_name()),
          std::string(view.name()),        std::string(view.uid()),  std::string(view.resource_version())};
}

EventRecorder::EventRecorder(std::shared_ptr<kube::Client> client, EventRecorderOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      bucket_(options_.qps, options_.burst, options_.clock) {
  if (options_.reporting_controller.empty()) {
    throw std::invalid_argument(
        "EventRecorderOptions::reporting_controller is required (e.g. example.com/my-controller)");
  }
  if (!options_.clock) options_.clock = base::system_clock();
  if (options_.reporting_instance.empty()) options_.reporting_instance = host_name();
  if (options_.registry) {
    auto& family = prometheus::BuildCounter()
                       .Name("event_recorder_dropped_total")
                       .Help("Kubernetes Events not posted, by reason: the rate limit or a full queue")
                       .Register(*options_.registry);
    dropped_by_rate_limit_ = &family.Add({{"reason", "rate_limit"}});
    dropped_by_full_queue_ = &family.Add({{"reason", "queue_full"}});
  }
  last_drop_report_ = options_.clock->now() - options_.drop_report_interval;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

EventRecorder::~EventRecorder() {
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  report_drops(options_.clock->now(), true);
}

void EventRecorder::count_drop_locked(DropReason reason) {
  ++dropped_;
  prometheus::Counter* counter =
      reason == DropReason::rate_limit ? dropped_by_rate_limit_ : dropped_by_full_queue_;
  if (counter != nullptr) counter->Increment();
}

void EventRecorder::report_drops(TimePoint now, bool force) {
  std::size_t dropped = 0;
  std::size_t since_last_report = 0;
  {
    std::lock_guard lock(mutex_);
    if (dropped_ == reported_dropped_) return;
    if (!force && now - last_drop_report_ < options_.drop_report_interval) return;
    dropped = dropped_;
    since_last_report = dropped_ - reported_dropped_;
    reported_dropped_ = dropped_;
    last_drop_report_ = now;
  }
  log(spdlog::level::warn, "Events dropped by the rate limit or a full queue",
      {{"dropped", std::to_string(since_last_report)}, {"droppedTotal", std::to_string(dropped)}});
}

void EventRecorder::record(const EventSubject& regarding, EventSeverity severity, std::string reason,
                           std::string action, std::string note) {
  if (note.size() > kMaximumNoteBytes) note.resize(kMaximumNoteBytes);
  std::lock_guard lock(mutex_);
  if (queue_.size() >= options_.max_queued) {
    count_drop_locked(DropReason::queue_full);
    return;
  }
  queue_.push_back({regarding, severity, std::move(reason), std::move(action), std::move(note),
                    options_.clock->wall_now()});
  wake_.notify_all();
}

std::string EventRecorder::series_key(const Pending& pending) {
  std::string key;
  for (const std::string* part :
       {&pending.regarding.api_version, &pending.regarding.kind, &pending.regarding.namespace_name,
        &pending.regarding.name, &pending.regarding.uid, &pending.reason, &pending.action, &pending.note}) {
    key += *part;
    key += '\x1f';
  }
  key += pending.severity == EventSeverity::warning ? "Warning" : "Normal";
  return key;
}

bool EventRecorder::take_token() {
  const TimePoint now = options_.clock->now();
  if (bucket_.reserve(now) > Duration::zero()) {
    bucket_.cancel_reservation();
    return false;
  }
  return true;
}

void EventRecorder::post(const Pending& pending) {
  const std::string key = series_key(pending);
  const TimePoint now = options_.clock->now();
  {
    std::lock_guard lock(mutex_);
    auto series = series_.find(key);
    if (series != series_.end() && now - series->second.first_seen < options_.series_window) {
      // A repeat: counted now, written by the next series flush.
      ++series->second.count;
      series->second.last_observed = pending.observed;
      return;
    }
  }
  if (!take_token()) {
    std::lock_guard lock(mutex_);
    count_drop_locked(DropReason::rate_limit);
    return;
  }
  const auto since_epoch =
      std::chrono::duration_cast<std::chrono::nanoseconds>(pending.observed.time_since_epoch()).count();
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(since_epoch));
  const std::string name = pending.regarding.name + suffix;
  const std::string namespace_name = event_namespace(pending.regarding);

  rapidjson::Document event(rapidjson::kObjectType);
  auto& allocator = event.GetAllocator();
  auto text = [&](const std::string& value) { return rapidjson::Value(value.c_str(), allocator); };
  event.AddMember("apiVersion", "events.k8s.io/v1", allocator);
  event.AddMember("kind", "Event", allocator);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", text(name), allocator);
  metadata.AddMember("namespace", text(namespace_name), allocator);
  event.AddMember("metadata", metadata, allocator);
  event.AddMember("eventTime", text(base::format_micro_time(pending.observed)), allocator);
  event.AddMember("reportingController", text(options_.reporting_controller), allocator);
  event.AddMember("reportingInstance", text(options_.reporting_instance), allocator);
  event.AddMember("action", text(pending.action), allocator);
  event.AddMember("reason", text(pending.reason), allocator);
  event.AddMember("type", text(pending.severity == EventSeverity::warning ? "Warning" : "Normal"), allocator);
  event.AddMember("note", text(pending.note), allocator);
  rapidjson::Value regarding(rapidjson::kObjectType);
  regarding.AddMember("apiVersion", text(pending.regarding.api_version), allocator);
  regarding.AddMember("kind", text(pending.regarding.kind), allocator);
  if (!pending.regarding.namespace_name.empty()) {
    regarding.AddMember("namespace", text(pending.regarding.namespace_name), allocator);
  }
  regarding.AddMember("name", text(pending.regarding.name), allocator);
  if (!pending.regarding.uid.empty()) regarding.AddMember("uid", text(pending.regarding.uid), allocator);
  if (!pending.regarding.resource_version.empty()) {
    regarding.AddMember("resourceVersion", text(pending.regarding.resource_version), allocator);
  }
  event.AddMember("regarding", regarding, allocator);

  auto created = client_->create(kube::resources::events(), namespace_name, event);
  if (!created) {
    log(spdlog::level::warn, "Cannot create an Event",
        {{"namespace", namespace_name},
         {"name", pending.regarding.name},
         {"reason", pending.reason},
         {"error", created.error().to_string()}});
    return;
  }
  std::lock_guard lock(mutex_);
  Series& series = series_[key];
  series = Series{name, namespace_name, 1, 1, pending.observed, now, now};
}

void EventRecorder::flush_series(bool all) {
  const TimePoint now = options_.clock->now();
  struct Update {
    std::string key;
    std::string event_name;
    std::string namespace_name;
    int count;
    base::WallTime last_observed;
  };
  std::vector<Update> updates;
  {
    std::lock_guard lock(mutex_);
    for (auto position = series_.begin(); position != series_.end();) {
      Series& series = position->second;
      const bool pending = series.count > series.posted_count;
      if (!pending && now - series.first_seen >= options_.series_window) {
        position = series_.erase(position);
        continue;
      }
      if (pending && (all || now - series.last_flush >= options_.series_flush_interval)) {
        updates.push_back(
            {position->first, series.event_name, series.namespace_name, series.count, series.last_observed});
      }
      ++position;
    }
  }
  for (const auto& update : updates) {
    if (!take_token()) return;  // try again at the next flush
    const std::string patch = R"({"series":{"count":)" + std::to_string(update.count) +
                              R"(,"lastObservedTime":")" + base::format_micro_time(update.last_observed) +
                              "\"}}";
    auto patched = client_->patch(kube::resources::events(), update.namespace_name, update.event_name,
                                  kube::PatchType::Merge, patch);
    std::lock_guard lock(mutex_);
    auto series = series_.find(update.key);
    if (series == series_.end()) continue;
    series->second.last_flush = now;
    if (patched) {
      series->second.posted_count = update.count;
    } else {
      log(spdlog::level::warn, "Cannot update an Event series",
          {{"namespace", update.namespace_name},
           {"event", update.event_name},
           {"error", patched.error().to_string()}});
      if (kube::is_not_found(patched.error())) series_.erase(series);  // the Event expired: start over
    }
  }
}

TimePoint EventRecorder::next_series_flush_locked(TimePoint now) {
  TimePoint next = TimePoint::max();
  for (const auto& [key, series] : series_) {
    if (series.count > series.posted_count)
      next = std::min(next, series.last_flush + options_.series_flush_interval);
  }
  // Due already (the last flush found no token): when the bucket has one again.
  if (next <= now) next = now + bucket_.time_until_available(now);
  return next;
}

std::optional<EventRecorder::Pending> EventRecorder::take_queued() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return std::nullopt;
  Pending pending = std::move(queue_.front());
  queue_.pop_front();
  return pending;
}

void EventRecorder::flush() {
  std::lock_guard work(work_mutex_);
  while (auto pending = take_queued()) post(*pending);
  flush_series(true);
  report_drops(options_.clock->now(), true);
}

void EventRecorder::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex_);
      const TimePoint now = options_.clock->now();
      TimePoint wake_at = next_series_flush_locked(now);
      // Unreported drops: wake for their summary too.
      if (dropped_ != reported_dropped_)
        wake_at = std::min(wake_at, last_drop_report_ + options_.drop_report_interval);
      options_.clock->wait_until(wake_, lock, stop, wake_at, [&] { return !queue_.empty(); });
    }
    if (stop.stop_requested()) break;
    std::lock_guard work(work_mutex_);
    while (!stop.stop_requested()) {
      auto pending = take_queued();
      if (!pending) break;
      post(*pending);
    }
    flush_series(false);
    report_drops(options_.clock->now(), false);
  }
}

}  // namespace myop::runtime
