#include "runtime/queue/workqueue.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace myop::runtime {
namespace {

// The order get() serves the levels in: kAllPriorities reversed (std::views::reverse does not
// compile under clang-tidy 14's clang with libstdc++ 12).
constexpr std::array<Priority, kAllPriorities.size()> kPrioritiesHighestFirst = [] {
  auto reversed = kAllPriorities;
  std::reverse(reversed.begin(), reversed.end());
  return reversed;
}();

}  // namespace

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(std::move(options)), backoff_(options_.backoff) {
  if (!options_.clock) options_.clock = base::system_clock();
  if (!options_.metrics) options_.metrics = std::make_shared<NullWorkQueueMetrics>();
  if (options_.rate_per_second && *options_.rate_per_second > 0) {
    rate_limiter_.emplace(*options_.rate_per_second, options_.burst, options_.clock);
  }
  for (Priority priority : kAllPriorities) options_.metrics->depth_changed(kLocalCluster, priority, 0);
}

void WorkQueue::add(const ObjectKey& key, AddOptions add_options) {
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  const TimePoint now = options_.clock->now();
  options_.metrics->added(key.cluster, add_options.priority);
  const TimePoint ready_at = now + std::max(add_options.after, Duration::zero());

  auto [position, inserted] = entries_.try_emplace(key);
  Entry& entry = position->second;
  if (inserted) {
    entry.key = &position->first;
    entry.requested = entry.level = add_options.priority;
    entry.first_added = ready_at;
    entry.ready_at = ready_at;
    entry.sequence = next_sequence_++;
    place_locked(entry, now);
    notify_locked();
    return;
  }

  if (entry.place == Place::in_flight) {
    // Never hand the key to a second worker: park the add until done().
    if (!entry.dirty) {
      entry.dirty = true;
      entry.dirty_priority = add_options.priority;
      entry.dirty_ready_at = ready_at;
    } else {
      entry.dirty_priority = std::max(entry.dirty_priority, add_options.priority);
      entry.dirty_ready_at = std::min(entry.dirty_ready_at, ready_at);
    }
    return;
  }

  // Already waiting: collapse into the existing entry.
  const Priority requested = std::max(entry.requested, add_options.priority);
  TimePoint merged_ready_at = entry.ready_at;
  bool in_backoff = entry.in_backoff;
  // A backoff wait is only cut short by a high-priority trigger (a user change may fix the failure);
  // status churn on children must not turn a failing key into a hot loop.
  if (ready_at < entry.ready_at && (!entry.in_backoff || add_options.priority == Priority::high)) {
    merged_ready_at = ready_at;
    in_backoff = false;
  }
  bool move = false;
  switch (entry.place) {
    case Place::ready:
      move = requested > entry.level;
      break;
    case Place::deferred:
      move = requested > Priority::low;
      break;
    case Place::delayed:
      move = requested != entry.requested || merged_ready_at != entry.ready_at;
      break;
    case Place::in_flight:
      break;
  }
  entry.in_backoff = in_backoff;
  if (!move) {
    entry.requested = requested;
    return;
  }
  detach_locked(entry);
  entry.requested = requested;
  entry.level = std::max(entry.level, requested);
  entry.ready_at = merged_ready_at;
  entry.first_added = std::min(entry.first_added, merged_ready_at);
  place_locked(entry, now);
  notify_locked();
}

std::optional<WorkItem> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    const TimePoint now = options_.clock->now();
    if (auto item = take_locked(now)) return item;
    // Until the next item is due, or an add, done() or shut_down() notifies (each may change what
    // is ready or when).
    const TimePoint wakeup = next_wakeup_locked(now).value_or(TimePoint::max());
    const std::uint64_t changes = changes_;
    options_.clock->wait_until(condition_, lock, {}, wakeup, [&] { return changes_ != changes; });
  }
}

std::optional<WorkItem> WorkQueue::try_get() {
  std::lock_guard lock(mutex_);
  if (shutting_down_) return std::nullopt;
  return take_locked(options_.clock->now());
}

void WorkQueue::done(const WorkItem& item, Completion completion) {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(item.key);
  // Giving back a key that no worker holds is a programmer error.
  assert(position != entries_.end() && position->second.place == Place::in_flight);
  if (position == entries_.end() || position->second.place != Place::in_flight) return;
  Entry& entry = position->second;
  const TimePoint now = options_.clock->now();
  in_flight_.erase(&entry);
  options_.metrics->worked_for(item.key.cluster, now - entry.started);
  if (std::exchange(entry.taken_below_high, false)) {
    --below_high_in_flight_;
    // A worker waiting only because of the limit may take the next one now.
    if (options_.max_below_high_in_flight > 0) notify_locked();
  }
  if (options_.max_in_flight_per_cluster > 0) {
    if (auto held = cluster_in_flight_.find(item.key.cluster);
        held != cluster_in_flight_.end() && --held->second == 0)
      cluster_in_flight_.erase(held);
    notify_locked();
  }

  std::optional<TimePoint> requeue_at;
  bool backoff = false;
  switch (completion.kind) {
    case Completion::Kind::forget:
      failures_.erase(item.key);
      break;
    case Completion::Kind::retry: {
      const int failures = ++failures_[item.key];
      options_.metrics->retried(item.key.cluster);
      const double draw =
          options_.backoff.jitter > 0 ? std::uniform_real_distribution<double>()(random_) : 0.0;
      requeue_at = now + std::max(backoff_.delay(failures - 1, draw), completion.delay);
      backoff = true;
      break;
    }
    case Completion::Kind::requeue_after:
      failures_.erase(item.key);
      requeue_at = now + std::max(completion.delay, Duration::zero());
      break;
  }
  const Priority requeue_priority = completion.priority.value_or(item.priority);

  if (shutting_down_ || (!requeue_at && !entry.dirty)) {
    entries_.erase(position);
    return;
  }
  Priority priority;
  TimePoint ready_at;
  bool in_backoff = false;
  if (requeue_at && entry.dirty) {
    priority = std::max(requeue_priority, entry.dirty_priority);
    if (backoff && entry.dirty_priority != Priority::high) {
      ready_at = *requeue_at;
      in_backoff = true;
    } else {
      ready_at = std::min(*requeue_at, entry.dirty_ready_at);
      in_backoff = backoff && ready_at == *requeue_at;
    }
  } else if (requeue_at) {
    priority = requeue_priority;
    ready_at = *requeue_at;
    in_backoff = backoff;
  } else {
    priority = entry.dirty_priority;
    ready_at = entry.dirty_ready_at;
  }
  entry.dirty = false;
  entry.requested = entry.level = priority;
  entry.ready_at = ready_at;
  entry.first_added = ready_at;
  entry.in_backoff = in_backoff;
  entry.aged = false;
  entry.sequence = next_sequence_++;
  place_locked(entry, now);
  notify_locked();
}

void WorkQueue::shut_down() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  ++changes_;
  condition_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

std::size_t WorkQueue::depth() const {
  std::lock_guard lock(mutex_);
  return depth_[0] + depth_[1] + depth_[2];
}

std::size_t WorkQueue::depth(Priority priority) const {
  std::lock_guard lock(mutex_);
  return depth_[priority_index(priority)];
}

std::size_t WorkQueue::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_.size();
}

int WorkQueue::failures(const ObjectKey& key) const {
  std::lock_guard lock(mutex_);
  auto position = failures_.find(key);
  return position == failures_.end() ? 0 : position->second;
}

bool WorkQueue::is_in_flight(const ObjectKey& key) const {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(key);
  return position != entries_.end() && position->second.place == Place::in_flight;
}

bool WorkQueue::is_waiting(const ObjectKey& key) const {
  std::lock_guard lock(mutex_);
  auto position = entries_.find(key);
  if (position == entries_.end()) return false;
  return position->second.place != Place::in_flight || position->second.dirty;
}

void WorkQueue::publish_in_flight_metrics() {
  std::lock_guard lock(mutex_);
  const TimePoint now = options_.clock->now();
  struct Work {
    Duration total = Duration::zero();
    Duration longest = Duration::zero();
    bool held = false;
  };
  std::unordered_map<ClusterId, Work> work{{kLocalCluster, Work{}}};
  for (const Entry* entry : in_flight_) {
    Work& cluster = work[entry->key->cluster];
    cluster.held = true;
    cluster.total += now - entry->started;
    cluster.longest = std::max(cluster.longest, now - entry->started);
  }
  for (const ClusterId cluster : clusters_in_flight_reported_) work.try_emplace(cluster);
  clusters_in_flight_reported_.clear();
  for (const auto& [cluster, figures] : work) {
    options_.metrics->in_flight(cluster, figures.total, figures.longest);
    if (figures.held) clusters_in_flight_reported_.insert(cluster);
  }
}

std::optional<WorkItem> WorkQueue::take_locked(TimePoint now) {
  advance_time_locked(now);
  const std::optional<Choice> choice = choose_locked();
  if (!choice) return std::nullopt;
  if (rate_limiter_) {
    // Take a token only when one is free now; otherwise give the reservation back and wait.
    if (rate_limiter_->reserve(now) > Duration::zero()) {
      rate_limiter_->cancel_reservation();
      return std::nullopt;
    }
  }
  Level& level = levels_[priority_index(choice->level)];
  Entry& entry = *choice->entry;
  const ObjectKey& key = *entry.key;
  remove_ready_locked(entry);
  // The cluster goes to the back of the clusters' turn order, the tenant to the back of its
  // cluster's (each only if it still has waiting keys).
  if (auto cluster = level.clusters.find(key.cluster); cluster != level.clusters.end()) {
    level.turns.splice(level.turns.end(), level.turns, cluster->second.turn);
    ClusterQueue& tenants = cluster->second;
    if (auto tenant = tenants.tenants.find(key.namespace_name); tenant != tenants.tenants.end()) {
      tenants.turns.splice(tenants.turns.end(), tenants.turns, tenant->second.turn);
    }
  }
  count_depth_locked(key.cluster, entry.level, -1);
  entry.place = Place::in_flight;
  entry.started = now;
  entry.aged = false;
  entry.taken_below_high = entry.requested != Priority::high;
  if (entry.taken_below_high) ++below_high_in_flight_;
  if (options_.max_in_flight_per_cluster > 0) ++cluster_in_flight_[key.cluster];
  in_flight_.insert(&entry);
  options_.metrics->queued_for(key.cluster, now - std::min(now, entry.first_added));
  auto failures = failures_.find(key);
  return WorkItem{key, entry.requested, failures == failures_.end() ? 0 : failures->second, entry.first_added,
                  now};
}

void WorkQueue::place_locked(Entry& entry, TimePoint now) {
  if (entry.ready_at > now) {
    entry.place = Place::delayed;
    entry.level = entry.requested;
    delayed_.emplace(OrderKey{entry.ready_at, entry.sequence}, &entry);
  } else if (entry.level == Priority::low && options_.low_priority_watermark > 0 &&
             ready_size_locked() >= options_.low_priority_watermark) {
    entry.place = Place::deferred;
    entry.level_since = now;
    deferred_.emplace(OrderKey{now, entry.sequence}, &entry);
  } else {
    insert_ready_locked(entry, entry.level, now, false);
  }
  count_depth_locked(entry.key->cluster, entry.level, +1);
}

void WorkQueue::detach_locked(Entry& entry) {
  switch (entry.place) {
    case Place::ready:
      remove_ready_locked(entry);
      break;
    case Place::delayed:
      delayed_.erase(OrderKey{entry.ready_at, entry.sequence});
      break;
    case Place::deferred:
      deferred_.erase(OrderKey{entry.level_since, entry.sequence});
      break;
    case Place::in_flight:
      return;
  }
  count_depth_locked(entry.key->cluster, entry.level, -1);
}

void WorkQueue::insert_ready_locked(Entry& entry, Priority priority, TimePoint now, bool at_front) {
  Level& level = levels_[priority_index(priority)];
  auto [cluster, new_cluster] = level.clusters.try_emplace(entry.key->cluster);
  if (new_cluster) cluster->second.turn = level.turns.insert(level.turns.end(), entry.key->cluster);
  ClusterQueue& tenants = cluster->second;
  auto [tenant, new_tenant] = tenants.tenants.try_emplace(entry.key->namespace_name);
  if (new_tenant) tenant->second.turn = tenants.turns.insert(tenants.turns.end(), entry.key->namespace_name);
  auto& keys = tenant->second.keys;
  auto position = keys.end();
  if (at_front) {
    // Aged items go first in their tenant, after those that aged before them.
    position = keys.begin();
    while (position != keys.end() && (*position)->aged) ++position;
  }
  entry.tenant_position = keys.insert(position, &entry);
  entry.place = Place::ready;
  entry.level = priority;
  entry.level_since = now;
  level.by_age.emplace(OrderKey{now, entry.sequence}, &entry);
  ++level.size;
}

void WorkQueue::remove_ready_locked(Entry& entry) {
  Level& level = levels_[priority_index(entry.level)];
  auto cluster = level.clusters.find(entry.key->cluster);
  ClusterQueue& tenants = cluster->second;
  auto tenant = tenants.tenants.find(entry.key->namespace_name);
  tenant->second.keys.erase(entry.tenant_position);
  if (tenant->second.keys.empty()) {
    tenants.turns.erase(tenant->second.turn);
    tenants.tenants.erase(tenant);
    if (tenants.tenants.empty()) {
      level.turns.erase(tenants.turn);
      level.clusters.erase(cluster);
    }
  }
  level.by_age.erase(OrderKey{entry.level_since, entry.sequence});
  --level.size;
}

void WorkQueue::advance_time_locked(TimePoint now) {
  // Delayed items that are due become ready (or deferred).
  while (!delayed_.empty() && delayed_.begin()->first.first <= now) {
    Entry& entry = *delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    count_depth_locked(entry.key->cluster, entry.level, -1);
    place_locked(entry, now);
  }
  // Deferred low-priority work comes back once the queue is below the watermark, or after
  // max_deferral so that backpressure cannot starve it.
  while (!deferred_.empty()) {
    const auto& [since, deferred] = *deferred_.begin();
    const bool expired = since.first + options_.max_deferral <= now;
    if (!expired && ready_size_locked() >= options_.low_priority_watermark) break;
    Entry& entry = *deferred;
    deferred_.erase(deferred_.begin());
    insert_ready_locked(entry, entry.level, now, false);
  }
  // Aging: the oldest item of a lower level moves up one level once it has waited aging_interval.
  // At most one item per level per interval, so a big initial list trickles up instead of
  // swamping user changes, while every level still makes progress.
  for (Priority priority : {Priority::low, Priority::normal}) {
    Level& level = levels_[priority_index(priority)];
    if (level.by_age.empty()) continue;
    auto& last_promotion = last_promotion_[priority_index(priority)];
    if (last_promotion && *last_promotion + options_.aging_interval > now) continue;
    const auto& [since, oldest] = *level.by_age.begin();
    if (since.first + options_.aging_interval > now) continue;
    Entry& entry = *oldest;
    remove_ready_locked(entry);
    count_depth_locked(entry.key->cluster, priority, -1);
    entry.aged = true;
    const Priority next = priority == Priority::low ? Priority::normal : Priority::high;
    insert_ready_locked(entry, next, now, true);
    count_depth_locked(entry.key->cluster, next, +1);
    last_promotion = now;
  }
}

std::optional<TimePoint> WorkQueue::next_wakeup_locked(TimePoint now) {
  std::optional<TimePoint> wakeup;
  auto consider = [&](TimePoint candidate) {
    if (!wakeup || candidate < *wakeup) wakeup = candidate;
  };
  if (!delayed_.empty()) consider(delayed_.begin()->first.first);
  if (!deferred_.empty()) consider(deferred_.begin()->first.first + options_.max_deferral);
  if (rate_limiter_ && choose_locked()) {
    consider(now + rate_limiter_->time_until_available(now));
  }
  return wakeup;
}

void WorkQueue::notify_locked() {
  ++changes_;
  condition_.notify_one();
}

std::size_t WorkQueue::ready_size_locked() const {
  return levels_[0].size + levels_[1].size + levels_[2].size;
}

std::optional<WorkQueue::Choice> WorkQueue::choose_locked() const {
  if (options_.max_below_high_in_flight == 0 || below_high_in_flight_ < options_.max_below_high_in_flight) {
    // The highest level; the cluster at the front of its turn order, that cluster's tenant at the
    // front of its own, and that tenant's oldest key.
    for (const Priority priority : kPrioritiesHighestFirst) {
      const Level& level = levels_[priority_index(priority)];
      if (level.size == 0) continue;
      for (const ClusterId cluster : level.turns) {
        if (cluster_full_locked(cluster)) continue;
        const ClusterQueue& tenants = level.clusters.at(cluster);
        return Choice{priority, tenants.tenants.at(tenants.turns.front()).keys.front()};
      }
    }
    return std::nullopt;
  }
  // The limit holds the backlog back: only a key added at high priority may go (aged ones are
  // skipped, so the walk is as long as the aged keys ahead of the first real one), clusters and
  // their tenants in turn order, each tenant from its oldest key.
  const Level& level = levels_[priority_index(Priority::high)];
  for (const ClusterId cluster : level.turns) {
    if (cluster_full_locked(cluster)) continue;
    const ClusterQueue& tenants = level.clusters.at(cluster);
    for (const std::string& tenant : tenants.turns) {
      for (Entry* entry : tenants.tenants.at(tenant).keys) {
        if (entry->requested == Priority::high) return Choice{Priority::high, entry};
      }
    }
  }
  return std::nullopt;
}

bool WorkQueue::cluster_full_locked(ClusterId cluster) const {
  if (options_.max_in_flight_per_cluster == 0) return false;
  const auto held = cluster_in_flight_.find(cluster);
  return held != cluster_in_flight_.end() && held->second >= options_.max_in_flight_per_cluster;
}

void WorkQueue::count_depth_locked(ClusterId cluster, Priority priority, int change) {
  const auto apply = [change](std::size_t& depth) {
    depth = static_cast<std::size_t>(static_cast<long long>(depth) + change);
    return depth;
  };
  apply(depth_[priority_index(priority)]);
  auto position = cluster_depth_.try_emplace(cluster).first;
  options_.metrics->depth_changed(cluster, priority, apply(position->second[priority_index(priority)]));
  if (std::ranges::all_of(position->second, [](std::size_t depth) { return depth == 0; }))
    cluster_depth_.erase(position);
}

}  // namespace myop::runtime
