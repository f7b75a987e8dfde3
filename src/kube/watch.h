// The watcher: keeps a consumer (an informer's cache) in step with one collection on the API server,
// through list, watch, reconnects and relists, without ever losing an event.
//
// An explicit state machine, after kube-rs's watcher.rs:
//
//   Empty ──(WatchList supported)──> InitialStreaming ──(BOOKMARK k8s.io/initial-events-end)──> Watching
//     │                                                                                          ^
//     └──(otherwise)──> InitialListing (LIST pages of `page_size`) ──(last page)──────────────────┘
//   Watching ──(410 Gone/Expired)──> Empty           Watching ──(any other end or error)──> Watching
//   InitialStreaming / InitialListing ──(any error)──> Empty
//
// Every initial state (first or after a 410) reaches the consumer as InitStart, InitApply*, InitDone, so
// a cache can build the new state aside and swap it in: objects deleted while we were away disappear.
// InitStart may come again before InitDone (the attempt failed): drop the partial state then.
// After InitDone, events are Apply (ADDED/MODIFIED), Delete, Bookmark. A watch resumes from the last
// resourceVersion it saw; it asks for bookmarks so that the resourceVersion stays fresh on quiet
// collections; each watch asks the server to end it after a random 5 to 10 minutes (timeoutSeconds) so
// that load spreads over API servers. Failures wait a jittered backoff (0.8 s -> 30 s) before the next
// attempt; progress resets it.
//
// Stall detection: the API server sends a watch that asked for bookmarks a BOOKMARK about every minute
// (kube-apiserver's fixed bookmark frequency) and 2 s before its timeoutSeconds, so a healthy watch is
// never silent for much more than a minute. A watch that receives no byte for `stall_timeout` (90 s by
// default) is taken as stalled (a half-open connection, a proxy or load balancer holding it open) and
// dropped; the next attempt resumes from the last resourceVersion (Watching ──(stall)──> Watching), so an
// event sent into the dead connection arrives on the new one. A change is therefore seen at most
// stall_timeout + one backoff wait after the connection died. A server that sends no bookmarks costs a
// reconnect per quiet stall_timeout, never a relist.
//
// WatchList (sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true) streams
// the initial state from the watch cache instead of one large LIST. A server that refuses it (422/400:
// feature gate off, or an API server older than 1.27) gets a paginated LIST from then on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "base/backoff.h"
#include "base/clock.h"
#include "kube/errors.h"
#include "kube/object.h"
#include "kube/watch_parser.h"
#include "kube/watch_source.h"

namespace myop::kube {

enum class WatcherState {
  Empty,             // nothing known: the next step builds the initial state
  InitialListing,    // paginated LIST in progress
  InitialStreaming,  // WatchList in progress, waiting for the initial-events-end bookmark
  Watching,          // initial state delivered; watching from a resourceVersion
};
std::string_view watcher_state_name(WatcherState state);

enum class WatcherEventType {
  InitStart,  // a new initial state begins (first start, or a relist after 410)
  InitApply,  // one object of the initial state
  InitDone,   // the initial state is complete: objects not seen since InitStart are gone
  Apply,      // ADDED or MODIFIED
  Delete,     // DELETED (the object's last state)
  Bookmark,   // the collection is at `resource_version`; no object changed
};
std::string_view watcher_event_type_name(WatcherEventType type);

struct WatcherEvent {
  WatcherEventType type = WatcherEventType::InitStart;
  std::optional<Object> object;  // InitApply, Apply, Delete
  std::string resource_version;  // InitDone, Bookmark; the object's for the others
};

enum class InitialListMode {
  Auto,           // WatchList, falling back to paginated LIST when the server refuses it
  WatchList,      // WatchList only (keep trying on refusal)
  PaginatedList,  // LIST with limit/continue, then watch
};

struct WatcherOptions {
  std::string label_selector;
  std::string field_selector;
  // Sent with every list and watch (ListOptions::shard_selector). The server may ignore it: a consumer
  // that needs only the shard's objects filters them itself too (runtime/cache/informer.h does).
  std::string shard_selector;
  InitialListMode initial_list_mode = InitialListMode::Auto;
  std::int64_t page_size = 500;  // client-go's default
  // Waits between attempts; the defaults are the watch's (0.8 s doubling to 30 s, up to 20 % shorter).
  base::BackoffSettings backoff{};
  // timeoutSeconds of each watch is drawn from [minimum, maximum].
  std::chrono::seconds minimum_watch_timeout{300};
  std::chrono::seconds maximum_watch_timeout{600};
  // No byte (event or bookmark) for this long drops a watch as stalled (see the top of this file). It
  // must exceed the API server's bookmark interval (one minute), or quiet healthy watches are cut.
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(90)};
  std::optional<std::uint64_t> random_seed;  // for deterministic tests; std::random_device otherwise
  // The backoff waits run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Called for every failure the watcher recovers from (it always does), with the wait before the next
  // attempt; for logs and metrics. A stall is an Error with reason Timeout. May be empty.
  std::function<void(const Error& error, std::chrono::milliseconds retry_in)> on_error;
  // Called each time a watch is dropped as stalled (stall_timeout without a byte on a stream that was
  // flowing), before on_error reports it; not for any other end or error. For a stall counter. May be
  // empty.
  std::function<void()> on_stall;
  // Objects that arrive in protobuf or CBOR come without metadata.managedFields (a cache drops it anyway;
  // the JSON encoding carries it either way).
  bool drop_managed_fields = false;
};

// Receives events in order on the thread that called run(). An exception thrown by it ends run() with
// that message as an Error.
using WatcherEventHandler = std::function<void(WatcherEvent event)>;

class Watcher {
 public:
  Watcher(std::shared_ptr<WatchSource> source, WatcherOptions options = {});

  // Runs until `stop` is requested (then returns ok within about a second) or the handler throws.
  Result<void> run(const WatcherEventHandler& on_event, std::stop_token stop);

  // Safe to call from any thread while run() is going.
  WatcherState state() const { return state_.load(); }
  std::string resource_version() const;
  bool watch_list_supported() const { return watch_list_supported_.load(); }

  // timeoutSeconds for the next watch (exposed for tests).
  int next_watch_timeout_seconds();

 private:
  // What one step of the state machine ended with.
  struct StepOutcome {
    std::optional<Error> error;  // why the step failed, if it did
    bool made_progress = false;  // delivered an event or completed an initial state
    bool retry_now = false;      // go on without waiting (switching from WatchList to LIST)
  };

  StepOutcome list_initial_state(const WatcherEventHandler& on_event, std::stop_token stop);
  StepOutcome stream(bool initial, const WatcherEventHandler& on_event, std::stop_token stop);
  void set_state(WatcherState state, std::string resource_version);
  void deliver(const WatcherEventHandler& on_event, WatcherEvent event);

  std::shared_ptr<WatchSource> source_;
  WatcherOptions options_;
  base::Backoff backoff_;
  std::mt19937_64 random_;
  WatchParser parser_;

  std::atomic<WatcherState> state_{WatcherState::Empty};
  std::atomic<bool> watch_list_supported_{true};
  mutable std::mutex resource_version_mutex_;
  std::string resource_version_;  // the last one seen in Watching; guarded by resource_version_mutex_

  std::optional<std::string> handler_failure_;  // set when the handler threw
};

}  // namespace myop::kube
