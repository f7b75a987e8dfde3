#pragma once
// Tenant-fair priority work queue.
//
// Guarantees (tested in test/unit/runtime/queue/workqueue_test.cpp):
// - a key is waiting at most once: duplicate adds collapse (highest priority, earliest time win);
// - a key is never handed to two workers at once: a key added while a worker holds it is parked
//   ("dirty") and queued again when the worker calls done();
// - ready items are handed out highest priority first; within a priority, clusters take turns,
//   then the namespaces (tenants) of the cluster whose turn it is, FIFO within a tenant: a backlog
//   in one cluster or one tenant delays another's work by one item per turn, not by its length;
// - a ready item waiting longer than `aging_interval` is promoted one priority, so low work is
//   served within about 2 * aging_interval plus one round over the busy tenants;
// - per-key exponential backoff counts failures reported through done() only, so extra watch
//   triggers do not push a key further out, and success resets it; an extra trigger of high
//   priority (a user change, which may fix the failure) cuts a backoff wait short, others do not;
// - above `low_priority_watermark` ready items, low-priority work is deferred (held aside) until
//   the queue drains below the watermark or it has been held for `max_deferral`;
// - with `max_below_high_in_flight` set, at most that many items below high priority are held by
//   workers at once, so a worker stays free for a user's change however deep the backlog. Only what
//   was added at high priority counts as high here: backlog promoted by aging does not take the
//   reserved worker;
// - with `max_in_flight_per_cluster` set, no cluster holds more workers than that at once: its keys
//   wait, and the other clusters' go first.
#include <array>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/token_bucket.h"
#include "runtime/clock.h"
#include "runtime/queue/object_key.h"
#include "runtime/queue/priority.h"
#include "runtime/queue/workqueue_metrics.h"

namespace myop::runtime {

struct WorkQueueOptions {
  std::string name = "workqueue";
  Duration aging_interval = std::chrono::seconds(5);
  // 0 disables backpressure.
  std::size_t low_priority_watermark = 0;
  Duration max_deferral = std::chrono::seconds(60);
  // 0: no limit. The controller sets it to its workers minus one: a high-priority item (a user's
  // change) never waits for a worker to finish backlog work, only for the one reserved for it.
  std::size_t max_below_high_in_flight = 0;
  // 0: no limit. Else at most that many items of one cluster are held by workers at once, so a
  // cluster whose API server hangs holds at most that many workers and the others keep the rest (the
  // controller sets workers minus one when its manager has a fleet).
  std::size_t max_in_flight_per_cluster = 0;
  // Per-key retry delays, as client-go's ItemExponentialFailureRateLimiter: 5 ms doubling to 1000 s.
  base::BackoffSettings backoff{std::chrono::milliseconds(5), std::chrono::seconds(1000), 2.0, 0.0,
                                base::JitterDirection::down};
  // Optional overall limit on hand-outs (base::TokenBucket, driven by `clock`).
  std::optional<double> rate_per_second;
  int burst = 100;
  std::shared_ptr<const base::Clock> clock = base::system_clock();
  std::shared_ptr<WorkQueueMetrics> metrics = std::make_shared<NullWorkQueueMetrics>();
};

struct AddOptions {
  Priority priority = Priority::normal;
  Duration after = Duration::zero();
};

// What a worker holds. Give it back through done().
struct WorkItem {
  ObjectKey key;
  Priority priority = Priority::normal;
  // Consecutive failures so far (0 on a first attempt).
  int failures = 0;
  TimePoint first_added;
  TimePoint started;
};

// How a worker finished an item.
struct Completion {
  enum class Kind {
    forget,         // success or a terminal error: reset backoff, do not requeue
    retry,          // failure or an explicit requeue: one more failure, requeue after backoff
    requeue_after,  // reset backoff and requeue after `delay`
  };
  Kind kind = Kind::forget;
  // requeue_after: the wait. retry: the least wait (the API server's Retry-After), when longer than
  // the backoff's.
  Duration delay = Duration::zero();
  std::optional<Priority> priority;  // for the requeue; default: the item's priority

  static Completion success() { return {}; }
  static Completion retry(Duration at_least = Duration::zero()) {
    return {Kind::retry, at_least, std::nullopt};
  }
  static Completion after(Duration delay, std::optional<Priority> priority = std::nullopt) {
    return {Kind::requeue_after, delay, priority};
  }
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const ObjectKey& key, AddOptions options = {});

  // Blocks until an item is ready (and the rate limit allows) or the queue shuts down (nullopt).
  std::optional<WorkItem> get();
  // Same without blocking.
  std::optional<WorkItem> try_get();

  void done(const WorkItem& item, Completion completion);

  // Wakes every blocked get() with nullopt; further adds are ignored. Items held by workers may
  // still be given back with done().
  void shut_down();
  bool shutting_down() const;

  // Waiting items (ready, delayed and deferred); not those held by workers.
  std::size_t depth() const;
  std::size_t depth(Priority priority) const;
  std::size_t in_flight() const;
  int failures(const ObjectKey& key) const;
  bool is_in_flight(const ObjectKey& key) const;
  bool is_waiting(const ObjectKey& key) const;

  // Reports unfinished-work and longest-running times to the metrics; call periodically.
  void publish_in_flight_metrics();

 private:
  enum class Place { ready, delayed, deferred, in_flight };
  using OrderKey = std::pair<TimePoint, std::uint64_t>;

  // One per key that is waiting or held. The containers below point at entries (an unordered_map's
  // nodes never move) instead of holding copies of the key: a queued key costs one copy, its node in
  // entries_, not four (a backlog of 10,000 keys held 2 MiB of copies).
  struct Entry {
    const ObjectKey* key = nullptr;  // entries_' own key of this entry
    Place place = Place::delayed;
    Priority requested = Priority::low;  // highest priority any add asked for
    Priority level = Priority::low;      // current level, raised by aging
    TimePoint first_added;
    TimePoint ready_at;
    TimePoint level_since;  // entered its current ready level (aging clock)
    bool in_backoff = false;
    bool aged = false;
    std::uint64_t sequence = 0;
    std::list<Entry*>::iterator tenant_position;
    // Parked add that arrived while a worker held the key.
    bool dirty = false;
    Priority dirty_priority = Priority::low;
    TimePoint dirty_ready_at;
    TimePoint started;
    bool taken_below_high = false;  // not requested at high: counted in below_high_in_flight_
  };

  struct TenantQueue {
    std::list<Entry*> keys;
    std::list<std::string>::iterator turn;
  };

  struct ClusterQueue {
    std::unordered_map<std::string, TenantQueue> tenants;
    std::list<std::string> turns;  // tenants with waiting keys, in the order they get their turn
    std::list<ClusterId>::iterator turn;
  };

  struct Level {
    std::unordered_map<ClusterId, ClusterQueue> clusters;
    std::list<ClusterId> turns;  // clusters with waiting keys, in the order they get their turn
    std::map<OrderKey, Entry*> by_age;
    std::size_t size = 0;
  };

  std::optional<WorkItem> take_locked(TimePoint now);
  void place_locked(Entry& entry, TimePoint now);
  void detach_locked(Entry& entry);
  void insert_ready_locked(Entry& entry, Priority priority, TimePoint now, bool at_front);
  void remove_ready_locked(Entry& entry);
  void advance_time_locked(TimePoint now);
  std::optional<TimePoint> next_wakeup_locked(TimePoint now);
  std::size_t ready_size_locked() const;
  // The item a worker would take now, if any: its level and entry (whose key names its cluster and
  // tenant).
  struct Choice {
    Priority level;
    Entry* entry;
  };
  std::optional<Choice> choose_locked() const;
  // Whether the cluster holds as many workers as max_in_flight_per_cluster allows.
  bool cluster_full_locked(ClusterId cluster) const;
  void count_depth_locked(ClusterId cluster, Priority priority, int change);
  // Wakes a blocked get(): something it waits for may have changed.
  void notify_locked();

  WorkQueueOptions options_;
  base::BackoffSchedule backoff_;
  std::mt19937_64 random_{std::random_device{}()};  // backoff jitter, when asked for
  mutable std::mutex mutex_;
  std::condition_variable_any condition_;
  bool shutting_down_ = false;
  std::uint64_t changes_ = 0;  // counts notifications, so that get() knows it was woken
  std::uint64_t next_sequence_ = 0;
  std::unordered_map<ObjectKey, Entry, ObjectKeyHash> entries_;
  std::unordered_map<ObjectKey, int, ObjectKeyHash> failures_;
  std::array<Level, 3> levels_;
  std::map<OrderKey, Entry*> delayed_;   // by ready_at
  std::map<OrderKey, Entry*> deferred_;  // by time deferred
  std::array<std::size_t, 3> depth_{};   // all clusters'
  // Each cluster's share of depth_ (clusters with waiting keys only).
  std::unordered_map<ClusterId, std::array<std::size_t, 3>> cluster_depth_;
  // The clusters the in-flight metrics last reported work for: they get zeros once it is done.
  std::unordered_set<ClusterId> clusters_in_flight_reported_;
  std::array<std::optional<TimePoint>, 3> last_promotion_{};
  // The entries workers hold: the in-flight metrics walk these, not every queued key (a backlog of
  // 10,000 would cost a walk of 10,000 entries each time a worker starts after an idle moment).
  std::unordered_set<const Entry*> in_flight_;
  std::size_t below_high_in_flight_ = 0;
  std::unordered_map<ClusterId, std::size_t> cluster_in_flight_;  // only with max_in_flight_per_cluster
  std::optional<base::TokenBucket> rate_limiter_;
};

}  // namespace myop::runtime
