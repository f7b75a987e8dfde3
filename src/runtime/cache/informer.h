#pragma once
// An informer: one kind (in one namespace or all), kept in an ObjectCache by a kube::Watcher
// (list+watch, resumable, relist after 410), and told to subscribers as ObjectEvents.
//
// - Synced only after the first complete initial state; its objects arrive as `added` events with
//   initial_list set (low priority).
// - A relist (after 410 or a failed initial state) is diffed against the cache in place: each
//   listed object replaces its old snapshot at once (changed ones are delivered as updates), and
//   at the end objects not listed are deleted and delivered as deletes. Only keys are kept aside,
//   never a second copy of the objects.
// - Every object goes through a transform before it is stored; the default drops
//   metadata.managedFields and the kubectl last-applied-configuration annotation. The cache keeps
//   it packed (runtime/cache/cache.h); subscribers get the object itself in the event.
// - Read-your-own-writes: store_written() puts the object a write returned into the cache at once,
//   provided the cache still holds the version it held when the write was sent (so nothing newer
//   can have arrived meanwhile) and the object matches the informer's selectors. Only the cached
//   writer (runtime/controller/writer.h) calls it. Until the watch delivers the written resourceVersion,
//   other watch events for the key (necessarily older: the stream is ordered) do not overwrite it; when it
//   arrives, subscribers get the update as if the cache had not been touched. resourceVersions are only
//   compared for equality, never ordered. A write the writer opened with begin_write is also taken when
//   the watch moved on while it was in flight, provided all it delivered for the key meanwhile was older
//   than the write: not the write's own version, no delete, no relist (a Deployment's status event that
//   lands during our spec write would otherwise leave the cache on the older spec, and the next reconcile
//   would write again).
// - Every resync period (10 h by default, jittered) each cached object is re-delivered as a
//   `resync` event (low priority).
// - An `accept` filter (a shard's hash range) drops what the server sent but the informer does not
//   want, as if it had never been sent: a server that ignores shardSelector sends everything.
// - Health (runtime/cache/watch_health.h): when its list or watch keeps failing, problems() says so with
//   the API server's last error (for /readyz), a warning is logged, and on_failing is called; the
//   next progress ends it (logged at info).
#include <rapidjson/document.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kube/watch.h"
#include "kube/watch_source.h"
#include "runtime/cache/cache.h"
#include "runtime/cache/object_event.h"
#include "runtime/cache/selector.h"
#include "runtime/cache/watch_health.h"
#include "runtime/clock.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

using Transform = std::function<void(kube::Object&)>;

// Drops metadata.managedFields and the kubectl.kubernetes.io/last-applied-configuration annotation.
void strip_for_cache(kube::Object& object);

struct InformerOptions {
  std::string name = "informer";
  // Only objects of this namespace are accepted by store_written ("" = any).
  std::string namespace_name;
  // When set, only objects it returns true for are cached, delivered or taken by store_written. It
  // must decide on fields that never change (namespace, name, uid): an object is in or out for life.
  std::function<bool(const kube::ObjectView&)> accept;
  Transform transform = strip_for_cache;
  Duration resync_period = std::chrono::hours(10);
  double resync_jitter = 0.1;  // each period is resync_period * (1 +- jitter)
  // How long a written object is protected from older watch events if its own event never shows.
  Duration pending_write_timeout = std::chrono::minutes(2);
  CacheOptions cache{};
  kube::WatcherOptions watcher{};
  // Resyncs, pending-write expiry and the watcher's waits run on it (it replaces watcher.clock).
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  // Called with true when the list or watch starts failing (runtime/cache/watch_health.h) and with false
  // when it recovers, or when the informer stops while failing; for a metric. May be empty.
  std::function<void(bool failing)> on_failing;
};

class Informer final : public Runnable, public EventSource {
 public:
  Informer(std::shared_ptr<kube::WatchSource> source, InformerOptions options);
  ~Informer() override;

  std::string name() const override { return options_.name; }
  void start() override;
  void stop() override;
  bool has_synced() const override { return synced_; }
  void on_synced(std::function<void()> callback) override;
  void subscribe(EventHandler handler) override;
  // While the list or watch is failing: "<name> (<collection>): list and watch failing: <problem>".
  std::vector<std::string> problems() const override;

  const ObjectCache& cache() const { return cache_; }
  // Indexes label `key` for lookups by its value (ObjectCache::index_label).
  void index_label(std::string_view key) { cache_.index_label(key); }

  // The resourceVersion cached for `key` ("" when absent): what a write about to be sent is based on.
  std::string cached_resource_version(const ObjectKey& key) const;
  // The same for a write about to be sent, which stays open until end_write: meanwhile the informer
  // notes what its watch delivers for `key`, for store_written. Every begin_write needs its end_write.
  std::string begin_write(const ObjectKey& key);
  void end_write(const ObjectKey& key);
  // Read-your-own-writes: the object a create/update/patch/delete returned. `sent_at_version` is
  // cached_resource_version() taken before the request was sent. Returns what the cache now holds
  // for it, or null when the cache did not take it (it moved on, or the object is out of scope).
  ObjectPointer store_written(const kube::JsonValue& returned_object, std::string_view sent_at_version);
  // Read-your-own-writes for a delete that removed the object at once.
  void store_deleted(const ObjectKey& key, std::string_view sent_at_version);

  // One watcher event (the watch thread calls this; unit tests call it directly).
  void handle(kube::WatcherEvent event);
  // Re-delivers every cached object as a resync event (the resync thread calls this).
  void resync();
  // A failure the watcher will retry after (the watch thread calls this; unit tests call it directly).
  void watch_failed(const kube::Error& error);

 private:
  struct PendingWrite {
    std::string resource_version;  // "" for a delete
    ObjectPointer previous;        // what subscribers last saw for the key
    TimePoint expires;
  };
  // A key with writes in flight (begin_write .. end_write): what the watch delivered for it meanwhile.
  struct OpenWrite {
    int writers = 0;
    std::uint32_t list_epoch = 0;        // list_epoch_ at the first begin_write
    bool listing = false;                // a relist was under way then
    bool deleted = false;                // the watch delivered a delete since
    std::vector<std::string> delivered;  // resourceVersions the watch delivered since
    TimePoint expires;                   // dropped then if an end_write never comes
  };
  // Whether everything the watch delivered for `key` since its write opened is older than
  // `written_version` (and the key was neither deleted nor relisted meanwhile).
  bool only_older_delivered_locked(const ObjectKey& key, std::string_view written_version) const;

  ObjectPointer prepare(kube::Object object) const;
  void emit_locked(const ObjectEvent& event);
  void prune_locked(TimePoint now);
  void watch_progressed();
  std::string collection() const;  // the watch source's description, for messages
  void run_watch(std::stop_token stop);
  void run_resync(std::stop_token stop);
  Duration next_resync_delay();

  std::shared_ptr<kube::WatchSource> source_;
  InformerOptions options_;
  // The watch's selectors, evaluated on written objects; none when they cannot be evaluated here
  // (then writes are left to the watch).
  std::optional<Selector> selector_;
  ObjectCache cache_;
  std::atomic<bool> synced_{false};

  std::mutex mutex_;  // serializes cache changes and event delivery
  std::vector<EventHandler> handlers_;
  std::vector<std::function<void()>> synced_callbacks_;  // until synced
  bool initial_state_open_ = false;
  std::uint32_t list_epoch_ = 0;  // cache entries seen since InitStart carry it
  std::unordered_map<ObjectKey, PendingWrite, ObjectKeyHash> pending_writes_;
  std::unordered_map<ObjectKey, OpenWrite, ObjectKeyHash> open_writes_;

  // Apart from mutex_, which event delivery holds: /readyz never waits on a subscriber.
  mutable std::mutex health_mutex_;
  WatchHealth health_;

  std::mt19937_64 random_{std::random_device{}()};
  std::jthread watch_thread_;
  std::jthread resync_thread_;
};

}  // namespace myop::runtime
