#include "kube/watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace myop::kube {
namespace {

constexpr int kShortestWatchTimeoutSeconds = 1;

std::string string_member_of(const JsonValue& object, std::initializer_list<std::string_view> path) {
  const JsonValue* value = ObjectView(object).find(path);
  if (value == nullptr || !value->IsString()) return {};
  return std::string(value->GetString(), value->GetStringLength());
}

// A LIST answer's items carry no apiVersion/kind; watch events do. Fill them in so the consumer sees
// the same shape either way: "ConfigMapList" -> "ConfigMap".
void fill_type_meta(Object& item, std::string_view list_api_version, std::string_view list_kind) {
  constexpr std::string_view list_suffix = "List";
  if (item.view().api_version().empty() && !list_api_version.empty()) {
    item.set_string_member(item.json(), "apiVersion", list_api_version);
  }
  if (item.view().kind().empty() && list_kind.size() > list_suffix.size() &&
      list_kind.ends_with(list_suffix)) {
    item.set_string_member(item.json(), "kind", list_kind.substr(0, list_kind.size() - list_suffix.size()));
  }
}

// A server that does not know WatchList refuses its query parameters with 422 Invalid (or 400).
bool means_watch_list_unsupported(const Error& error) {
  return error.reason == Reason::Invalid || error.reason == Reason::BadRequest;
}

}  // namespace

std::string_view watcher_state_name(WatcherState state) {
  switch (state) {
    case WatcherState::Empty:
      return "Empty";
    case WatcherState::InitialListing:
      return "InitialListing";
    case WatcherState::InitialStreaming:
      return "InitialStreaming";
    case WatcherState::Watching:
      return "Watching";
  }
  return "Unknown";
}

std::string_view watcher_event_type_name(WatcherEventType type) {
  switch (type) {
    case WatcherEventType::InitStart:
      return "InitStart";
    case WatcherEventType::InitApply:
      return "InitApply";
    case WatcherEventType::InitDone:
      return "InitDone";
    case WatcherEventType::Apply:
      return "Apply";
    case WatcherEventType::Delete:
      return "Delete";
    case WatcherEventType::Bookmark:
      return "Bookmark";
  }
  return "Unknown";
}

Watcher::Watcher(std::shared_ptr<WatchSource> source, WatcherOptions options)
    : source_(std::move(source)),
      options_(std::move(options)),
      backoff_(options_.backoff, options_.random_seed.value_or(std::random_device{}())),
      random_(options_.random_seed.value_or(std::random_device{}()) ^ 0x5bd1e995U) {
  if (!options_.clock) options_.clock = base::system_clock();
  if (options_.initial_list_mode == InitialListMode::PaginatedList) watch_list_supported_ = false;
  if (options_.page_size < 1) options_.page_size = 500;
  parser_.set_drop_managed_fields(options_.drop_managed_fields);
}

std::string Watcher::resource_version() const {
  std::lock_guard lock(resource_version_mutex_);
  return resource_version_;
}

void Watcher::set_state(WatcherState state, std::string resource_version) {
  {
    std::lock_guard lock(resource_version_mutex_);
    resource_version_ = std::move(resource_version);
  }
  state_ = state;
}

int Watcher::next_watch_timeout_seconds() {
  const long long maximum =
      std::max<long long>(options_.maximum_watch_timeout.count(), kShortestWatchTimeoutSeconds);
  const long long minimum =
      std::clamp<long long>(options_.minimum_watch_timeout.count(), kShortestWatchTimeoutSeconds, maximum);
  return static_cast<int>(std::uniform_int_distribution<long long>(minimum, maximum)(random_));
}

void Watcher::deliver(const WatcherEventHandler& on_event, WatcherEvent event) {
  if (handler_failure_) return;
  // The handler may run inside the transport's read loop: nothing may escape from here.
  try {
    on_event(std::move(event));
  } catch (const std::exception& exception) {
    handler_failure_ = exception.what();
  } catch (...) {
    handler_failure_ = "an exception that is not a std::exception";
  }
}

Result<void> Watcher::run(const WatcherEventHandler& on_event, std::stop_token stop) {
  while (!stop.stop_requested()) {
    StepOutcome outcome;
    switch (state()) {
      case WatcherState::Empty:
        set_state(watch_list_supported_ ? WatcherState::InitialStreaming : WatcherState::InitialListing, {});
        continue;
      case WatcherState::InitialListing:
        outcome = list_initial_state(on_event, stop);
        break;
      case WatcherState::InitialStreaming:
        outcome = stream(/*initial=*/true, on_event, stop);
        break;
      case WatcherState::Watching:
        outcome = stream(/*initial=*/false, on_event, stop);
        break;
    }
    if (handler_failure_) {
      return make_error(Reason::Unknown,
                        "watch " + source_->describe() + ": the event handler threw: " + *handler_failure_);
    }
    if (stop.stop_requested()) break;
    if (outcome.made_progress) backoff_.reset();
    if (outcome.retry_now) continue;
    // A clean end after real progress (the server's timeoutSeconds) reconnects at once; an error, or an
    // end without a single event, waits, so a server that hangs up at once is not hammered.
    if (!outcome.error && outcome.made_progress) continue;
    base::Duration delay = backoff_.next_delay();
    if (outcome.error) {
      if (outcome.error->retry_after) delay = std::max<base::Duration>(delay, *outcome.error->retry_after);
      const auto delay_milliseconds = std::chrono::round<std::chrono::milliseconds>(delay);
      spdlog::warn("watch {}: {} (state {}); retrying in {} ms", source_->describe(),
                   outcome.error->to_string(), watcher_state_name(state()), delay_milliseconds.count());
      if (options_.on_error) options_.on_error(*outcome.error, delay_milliseconds);
    }
    if (!options_.clock->sleep_for(stop, delay)) break;
  }
  return {};
}

Watcher::StepOutcome Watcher::list_initial_state(const WatcherEventHandler& on_event, std::stop_token stop) {
  deliver(on_event, WatcherEvent{WatcherEventType::InitStart, std::nullopt, {}});
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.shard_selector = options_.shard_selector;
  list_options.limit = options_.page_size;
  // resourceVersion "" is a consistent read from etcd: never older than what a previous watch showed.
  std::string list_resource_version;
  while (true) {
    auto page = source_->list(list_options, stop);
    if (!page.ok()) {
      set_state(WatcherState::Empty, {});
      return StepOutcome{std::move(page).error()};
    }
    const rapidjson::Document& list = page.value();
    const std::string api_version = string_member_of(list, {"apiVersion"});
    const std::string kind = string_member_of(list, {"kind"});
    if (const JsonValue* items = find_member(list, "items"); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        // A compact copy: the page's Document uses RapidJSON's 64 KiB default chunks.
        Object object = Object::copy_of(item);
        fill_type_meta(object, api_version, kind);
        std::string resource_version(object.resource_version());
        deliver(on_event,
                WatcherEvent{WatcherEventType::InitApply, std::move(object), std::move(resource_version)});
        if (handler_failure_) return {};
      }
    }
    list_resource_version = string_member_of(list, {"metadata", "resourceVersion"});
    list_options.continue_token = string_member_of(list, {"metadata", "continue"});
    if (list_options.continue_token.empty()) break;
  }
  deliver(on_event, WatcherEvent{WatcherEventType::InitDone, std::nullopt, list_resource_version});
  set_state(WatcherState::Watching, list_resource_version);
  return StepOutcome{std::nullopt, /*made_progress=*/true};
}

Watcher::StepOutcome Watcher::stream(bool initial, const WatcherEventHandler& on_event,
                                     std::stop_token stop) {
  WatchOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.shard_selector = options_.shard_selector;
  watch_options.allow_bookmarks = true;
  watch_options.timeout_seconds = next_watch_timeout_seconds();
  watch_options.stream.idle_timeout = options_.stall_timeout;
  if (initial) {
    // WatchList: the current state as ADDED events from the watch cache, then the end bookmark.
    watch_options.send_initial_events = true;
    watch_options.resource_version_match = "NotOlderThan";
    deliver(on_event, WatcherEvent{WatcherEventType::InitStart, std::nullopt, {}});
    if (handler_failure_) return {};
  } else {
    watch_options.resource_version = resource_version();
  }

  parser_.reset();
  parser_.set_encoding(WatchEncoding::Json);
  // The answer's Content-Type says how its body is encoded (protobuf for a built-in kind, when asked).
  watch_options.stream.on_open = [this](std::string_view content_type) {
    parser_.set_encoding(watch_encoding_of(content_type));
  };
  bool initial_done = !initial;
  bool received_bytes = false;
  bool made_progress = false;
  std::optional<Error> stream_error;

  auto on_chunk = [&](std::string_view chunk) -> bool {
    received_bytes = true;
    parser_.append(chunk);
    while (auto item = parser_.next()) {
      if (!item->ok()) {
        stream_error = std::move(*item).error();
        return false;
      }
      WatchEvent& event = item->value();
      std::string resource_version(event.resource_version());
      if (!initial_done) {
        switch (event.type) {
          case WatchEventType::Added:
          case WatchEventType::Modified:
            deliver(on_event, WatcherEvent{WatcherEventType::InitApply, std::move(event.object),
                                           std::move(resource_version)});
            break;
          case WatchEventType::Bookmark:
            if (event.is_initial_events_end()) {
              initial_done = true;
              made_progress = true;
              set_state(WatcherState::Watching, resource_version);
              deliver(on_event,
                      WatcherEvent{WatcherEventType::InitDone, std::nullopt, std::move(resource_version)});
            }
            break;
          case WatchEventType::Deleted:
            stream_error =
                make_error(Reason::Unknown, "a DELETED event among the initial events; starting over");
            return false;
        }
      } else {
        WatcherEventType type = WatcherEventType::Apply;
        if (event.type == WatchEventType::Deleted) type = WatcherEventType::Delete;
        if (event.type == WatchEventType::Bookmark) type = WatcherEventType::Bookmark;
        // Remember the position before handing the event on: a reconnect resumes after it.
        if (!resource_version.empty()) {
          std::lock_guard lock(resource_version_mutex_);
          resource_version_ = resource_version;
        }
        made_progress = true;
        std::optional<Object> object;
        if (type != WatcherEventType::Bookmark) object = std::move(event.object);
        deliver(on_event, WatcherEvent{type, std::move(object), std::move(resource_version)});
      }
      if (handler_failure_) return false;
    }
    return true;
  };

  auto result = source_->watch(watch_options, on_chunk, stop);
  if (handler_failure_) return {};
  if (!stream_error && !result.ok() && !is_cancelled(result.error())) stream_error = result.error();
  if (stream_error && stream_error->reason == Reason::Timeout && received_bytes) {
    // The transport's idle timeout on a stream that was flowing: events and bookmarks stopped.
    stream_error->message =
        "stalled: no event and no bookmark for " +
        std::to_string(std::chrono::round<std::chrono::seconds>(options_.stall_timeout).count()) +
        " s (the API server sends a bookmark about every minute); dropping the connection and " +
        (initial_done ? "resuming from resourceVersion " + resource_version()
                      : std::string("starting the initial state over"));
    if (options_.on_stall) options_.on_stall();
  }
  if (!stream_error && result.ok() && !initial_done) {
    stream_error = make_error(Reason::Unknown, "the stream ended before the initial-events-end bookmark");
  }

  if (initial && !initial_done) {
    set_state(WatcherState::Empty, {});
    if (stream_error && !received_bytes && options_.initial_list_mode == InitialListMode::Auto &&
        means_watch_list_unsupported(*stream_error)) {
      spdlog::info("watch {}: the API server refused WatchList ({}); using paginated LIST",
                   source_->describe(), stream_error->message);
      watch_list_supported_ = false;
      return StepOutcome{std::nullopt, made_progress, /*retry_now=*/true};
    }
  } else if (stream_error && is_gone(*stream_error)) {
    // The resourceVersion left etcd's history: only a new initial state can bring the consumer up to date.
    set_state(WatcherState::Empty, {});
  }
  return StepOutcome{std::move(stream_error), made_progress};
}

}  // namespace myop::kube
