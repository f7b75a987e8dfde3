#include "runtime/cache/informer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/result.h"
#include "runtime/controller/event_handler.h"
#include "runtime/logging.h"

namespace myop::runtime {

namespace {

constexpr std::string_view kLastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

}  // namespace

void strip_for_cache(kube::Object& object) {
  object.erase_managed_fields();
  object.erase_annotation(kLastAppliedAnnotation);
  // An annotations map left empty still costs a member in every cached copy.
  if (auto* metadata = kube::find_member(object.json(), "metadata"); metadata && metadata->IsObject()) {
    if (auto* annotations = kube::find_member(*metadata, "annotations");
        annotations && annotations->IsObject() && annotations->ObjectEmpty()) {
      metadata->RemoveMember("annotations");
    }
  }
}

Informer::Informer(std::shared_ptr<kube::WatchSource> source, InformerOptions options)
    : source_(std::move(source)),
      options_(std::move(options)),
      selector_(Selector::parse(options_.watcher.label_selector, options_.watcher.field_selector)),
      cache_(options_.cache) {
  if (!options_.clock) options_.clock = base::system_clock();
}

Informer::~Informer() { stop(); }

void Informer::subscribe(EventHandler handler) {
  std::lock_guard lock(mutex_);
  handlers_.push_back(std::move(handler));
}

void Informer::on_synced(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!synced_) {
      synced_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void Informer::start() {
  if (watch_thread_.joinable()) return;
  watch_thread_ = std::jthread([this](std::stop_token stop) { run_watch(stop); });
  if (options_.resync_period > Duration::zero()) {
    resync_thread_ = std::jthread([this](std::stop_token stop) { run_resync(stop); });
  }
}

void Informer::stop() {
  for (auto* thread : {&watch_thread_, &resync_thread_}) {
    if (thread->joinable()) {
      thread->request_stop();
      thread->join();
    }
  }
  // Stopped, it is no longer failing: a metric of failing informers must not keep counting it.
  bool was_failing = false;
  {
    std::lock_guard lock(health_mutex_);
    was_failing = health_.failing();
    health_.progressed();
  }
  if (was_failing && options_.on_failing) options_.on_failing(false);
}

std::string Informer::collection() const { return source_ ? source_->describe() : "(no source)"; }

std::vector<std::string> Informer::problems() const {
  base::Result<void, std::string> health;
  {
    std::lock_guard lock(health_mutex_);
    health = health_.health(options_.clock->now());
  }
  if (health) return {};
  return {options_.name + " (" + collection() + "): list and watch failing: " + health.error()};
}

void Informer::watch_failed(const kube::Error& error) {
  bool became_failing = false;
  int failures = 0;
  {
    std::lock_guard lock(health_mutex_);
    became_failing = health_.failed(error, options_.clock->now());
    failures = health_.failures();
  }
  if (!became_failing) return;
  log(spdlog::level::warn, "Informer failing: its list and watch keep failing; not ready until one works",
      {{"informer", options_.name},
       {"collection", collection()},
       {"failures", std::to_string(failures)},
       {"error", error.to_string()}});
  if (options_.on_failing) options_.on_failing(true);
}

void Informer::watch_progressed() {
  Duration failing_for{};
  bool recovered = false;
  {
    std::lock_guard lock(health_mutex_);
    if (health_.failures() == 0) return;
    failing_for = options_.clock->now() - health_.first_failure();
    recovered = health_.progressed();
  }
  if (!recovered) return;
  log(spdlog::level::info, "Informer recovered: its list and watch work again",
      {{"informer", options_.name},
       {"collection", collection()},
       {"failedForSeconds",
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(failing_for).count())}});
  if (options_.on_failing) options_.on_failing(false);
}

ObjectPointer Informer::prepare(kube::Object object) const {
  if (options_.transform) options_.transform(object);
  // Not copied into a tighter pool: the cache keeps a packed form, and this object only while it is
  // among the hot ones (runtime/cache/cache.h).
  return std::make_shared<const kube::Object>(std::move(object));
}

void Informer::emit_locked(const ObjectEvent& event) {
  for (auto& handler : handlers_) handler(event);
}

void Informer::prune_locked(TimePoint now) {
  for (auto position = pending_writes_.begin(); position != pending_writes_.end();) {
    position = position->second.expires <= now ? pending_writes_.erase(position) : std::next(position);
  }
  for (auto position = open_writes_.begin(); position != open_writes_.end();) {
    position = position->second.expires <= now ? open_writes_.erase(position) : std::next(position);
  }
}

void Informer::handle(kube::WatcherEvent event) {
  // The list or watch works (whatever the accept filter makes of the event).
  if (event.type != kube::WatcherEventType::InitStart && event.type != kube::WatcherEventType::InitApply)
    watch_progressed();
  // Not ours (the server ignored the shard selector): never cached, so never deleted either.
  if (event.object && options_.accept && !options_.accept(event.object->view())) return;
  const TimePoint now = options_.clock->now();
  // The transform runs before the lock: writers (store_written) and the watch do not wait on each
  // other's.
  const ObjectPointer object = event.object ? prepare(std::move(*event.object)) : nullptr;
  std::lock_guard lock(mutex_);
  prune_locked(now);
  switch (event.type) {
    case kube::WatcherEventType::InitStart:
      initial_state_open_ = true;
      ++list_epoch_;
      return;
    case kube::WatcherEventType::InitApply: {
      if (!object) return;
      const ObjectKey key = key_of(*object);
      ObjectPointer previous;
      // A list is a complete, consistent state: it wins over a pending write.
      if (auto pending = pending_writes_.find(key); pending != pending_writes_.end()) {
        previous = pending->second.previous;
        pending_writes_.erase(pending);
        cache_.put(object);
      } else if (const std::string cached = cache_.resource_version(key);
                 !cached.empty() && cached == object->resource_version()) {
        cache_.mark(key, list_epoch_);
        return;  // unchanged: nothing to store or to tell
      } else {
        previous = cache_.exchange(object);
      }
      cache_.mark(key, list_epoch_);
      if (previous && previous->resource_version() == object->resource_version()) return;
      ObjectEvent change(previous ? EventType::updated : EventType::added, object, previous);
      change.initial_list = !synced_;
      change.seen = now;
      emit_locked(change);
      return;
    }
    case kube::WatcherEventType::InitDone: {
      // Whatever the new initial state did not contain was deleted while we were not watching.
      for (const auto& key : cache_.unmarked(list_epoch_)) {
        ObjectPointer removed = cache_.take(key);
        pending_writes_.erase(key);
        if (!removed) continue;
        ObjectEvent deleted(EventType::deleted, removed);
        deleted.seen = now;
        emit_locked(deleted);
      }
      initial_state_open_ = false;
      if (!synced_) {
        synced_ = true;
        log(spdlog::level::info, "Informer synced",
            {{"informer", options_.name}, {"objects", std::to_string(cache_.size())}});
        for (auto& callback : std::exchange(synced_callbacks_, {})) callback();
      }
      return;
    }
    case kube::WatcherEventType::Apply: {
      if (!object) return;
      const ObjectKey key = key_of(*object);
      if (auto open = open_writes_.find(key); open != open_writes_.end())
        open->second.delivered.emplace_back(object->resource_version());
      ObjectPointer previous;
      if (auto pending = pending_writes_.find(key); pending != pending_writes_.end()) {
        if (pending->second.resource_version != object->resource_version()) {
          // Older than our own write (the stream delivers in order and ours has not come yet).
          return;
        }
        previous = pending->second.previous;
        pending_writes_.erase(pending);
        // The cache already holds this version: the write's own answer (store_written).
        if (cache_.resource_version(key) != object->resource_version()) cache_.put(object);
      } else {
        previous = cache_.exchange(object);
      }
      ObjectEvent change(previous ? EventType::updated : EventType::added, object, previous);
      change.seen = now;
      emit_locked(change);
      return;
    }
    case kube::WatcherEventType::Delete: {
      if (!object) return;
      const ObjectKey key = key_of(*object);
      if (auto open = open_writes_.find(key); open != open_writes_.end()) open->second.deleted = true;
      pending_writes_.erase(key);
      cache_.erase(key);
      ObjectEvent deleted(EventType::deleted, object);
      deleted.seen = now;
      emit_locked(deleted);
      return;
    }
    case kube::WatcherEventType::Bookmark:
      return;
  }
}

std::string Informer::cached_resource_version(const ObjectKey& key) const {
  return cache_.resource_version(key);
}

std::string Informer::begin_write(const ObjectKey& key) {
  const TimePoint now = options_.clock->now();
  std::lock_guard lock(mutex_);
  OpenWrite& open = open_writes_[key];
  if (open.writers++ == 0) {
    open.list_epoch = list_epoch_;
    open.listing = initial_state_open_;
  }
  open.expires = now + options_.pending_write_timeout;
  return cache_.resource_version(key);
}

void Informer::end_write(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  if (auto open = open_writes_.find(key); open != open_writes_.end() && --open->second.writers <= 0)
    open_writes_.erase(open);
}

bool Informer::only_older_delivered_locked(const ObjectKey& key, std::string_view written_version) const {
  const auto open = open_writes_.find(key);
  if (open == open_writes_.end()) return false;
  const OpenWrite& write = open->second;
  // A relist (under way when the write opened, or begun since) may hold a state newer than the write
  // without ever delivering the write's own version; a delete comes after the write it follows. Either
  // way the write is not the newest.
  if (write.listing || write.list_epoch != list_epoch_ || write.deleted) return false;
  return std::ranges::find(write.delivered, written_version) == write.delivered.end();
}

ObjectPointer Informer::store_written(const kube::JsonValue& returned_object,
                                      std::string_view sent_at_version) {
  if (!returned_object.IsObject() || !selector_) return nullptr;
  const kube::ObjectView returned(returned_object);
  if (returned.name().empty() || returned.resource_version().empty()) return nullptr;
  if (!options_.namespace_name.empty() && returned.namespace_name() != options_.namespace_name)
    return nullptr;
  if (options_.accept && !options_.accept(returned)) return nullptr;
  const ObjectKey key{std::string(returned.namespace_name()), std::string(returned.name())};
  if (!selector_->matches(returned)) {
    // The write took the object out of this informer's view: the watch will say so with a delete.
    store_deleted(key, sent_at_version);
    return nullptr;
  }
  ObjectPointer object = prepare(kube::Object::copy_of(returned_object));
  const TimePoint now = options_.clock->now();
  std::lock_guard lock(mutex_);
  prune_locked(now);
  const std::string current_version = cache_.resource_version(key);
  // The cache moved past the version the write was sent at. When the watch delivered our write or
  // something newer meanwhile, the cache must not go back; when all it delivered is older than our
  // write (the stream is ordered: anything before our own version is older), our write is the newest.
  if (current_version != sent_at_version && !only_older_delivered_locked(key, object->resource_version()))
    return nullptr;
  // The server stored nothing (an apply or patch that changed no field keeps the version): no watch
  // event will echo it, so waiting for one would hide the next real change until the timeout. What
  // the server returned is what the cache holds.
  if (!current_version.empty() && object->resource_version() == current_version) return object;
  auto [pending, inserted] = pending_writes_.try_emplace(key);
  // Keep what subscribers saw before our first write.
  if (inserted) pending->second.previous = cache_.get(key);
  pending->second.resource_version = std::string(object->resource_version());
  pending->second.expires = now + options_.pending_write_timeout;
  cache_.put(object);
  // A relist in progress may predate this write: do not let its end delete what we just wrote.
  cache_.mark(key, list_epoch_);
  return object;
}

void Informer::store_deleted(const ObjectKey& key, std::string_view sent_at_version) {
  const TimePoint now = options_.clock->now();
  std::lock_guard lock(mutex_);
  const std::string current_version = cache_.resource_version(key);
  if (current_version.empty() || current_version != sent_at_version) return;
  ObjectPointer current = cache_.take(key);
  auto [pending, inserted] = pending_writes_.try_emplace(key);
  if (inserted) pending->second.previous = current;
  pending->second.resource_version.clear();
  pending->second.expires = now + options_.pending_write_timeout;
}

void Informer::resync() {
  std::lock_guard lock(mutex_);
  const TimePoint now = options_.clock->now();
  for (const auto& object : cache_.list()) {
    ObjectEvent event(EventType::resync, object);
    event.seen = now;
    emit_locked(event);
  }
}

Duration Informer::next_resync_delay() {
  std::uniform_real_distribution<double> factor(1.0 - options_.resync_jitter, 1.0 + options_.resync_jitter);
  return std::chrono::duration_cast<Duration>(options_.resync_period * factor(random_));
}

void Informer::run_watch(std::stop_token stop) {
  auto options = options_.watcher;
  options.clock = options_.clock;
  options.drop_managed_fields = true;  // strip_for_cache drops it: a protobuf event never builds it
  auto user_on_error = options.on_error;
  options.on_error = [this, user_on_error](const kube::Error& error, std::chrono::milliseconds retry_in) {
    log(spdlog::level::warn, "Watch failed, retrying",
        {{"informer", options_.name},
         {"error", error.to_string()},
         {"retryInMs", std::to_string(retry_in.count())}});
    watch_failed(error);
    if (user_on_error) user_on_error(error, retry_in);
  };
  while (!stop.stop_requested()) {
    kube::Watcher watcher(source_, options);
    auto result = watcher.run([this](kube::WatcherEvent event) { handle(std::move(event)); }, stop);
    if (stop.stop_requested()) break;
    if (!result) {
      log(spdlog::level::err, "Watcher ended, restarting",
          {{"informer", options_.name}, {"error", result.error().to_string()}});
      watch_failed(result.error());
    }
    options_.clock->sleep_for(stop, std::chrono::seconds(1));
  }
}

void Informer::run_resync(std::stop_token stop) {
  while (options_.clock->sleep_for(stop, next_resync_delay())) {
    if (synced_) resync();
  }
}

}  // namespace myop::runtime
