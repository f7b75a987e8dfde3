#include "runtime/cache/informer_set.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <mutex>

#include "kube/object.h"
#include "kube/packed_object.h"
#include "runtime/logging.h"
#include "runtime/sharding/shard_ring.h"

namespace myop::runtime {

InformerSet::InformerSet(const std::shared_ptr<kube::Client>& client, const kube::ResourceType& type,
                         std::vector<std::string> namespaces, InformerOptions options)
    : name_(options.name), all_namespaces_(namespaces.empty()), namespaces_(std::move(namespaces)) {
  if (all_namespaces_) {
    options.namespace_name.clear();
    informers_.push_back(
        std::make_shared<Informer>(kube::make_client_watch_source(client, type, ""), options));
    return;
  }
  // One packer for the set's caches (objects of one kind): CacheOptions::packer.
  if (!options.cache.packer) options.cache.packer = std::make_shared<kube::ObjectPacker>();
  for (const std::string& namespace_name : namespaces_) {
    InformerOptions scoped = options;
    scoped.name = name_ + "/" + namespace_name;
    scoped.namespace_name = namespace_name;
    informers_.push_back(
        std::make_shared<Informer>(kube::make_client_watch_source(client, type, namespace_name), scoped));
  }
}

InformerSet::InformerSet(std::shared_ptr<kube::Client> client, kube::ResourceType type, Sharded /*sharded*/,
                         InformerOptions options)
    : name_(options.name),
      all_namespaces_(true),
      sharded_(true),
      client_(std::move(client)),
      type_(std::move(type)),
      options_(std::move(options)) {
  options_.namespace_name.clear();
  // The set's hot objects are spread over its slots, so a replica owning every slot keeps as many
  // parsed as one unsharded informer would.
  options_.cache.hot_objects = std::max<std::size_t>(8, options_.cache.hot_objects / kShardSlots);
  // One packer for every slot's cache: a slot that changes hands leaves no packer behind, and a
  // replica's packers do not grow with its slots (CacheOptions::packer).
  if (!options_.cache.packer) options_.cache.packer = std::make_shared<kube::ObjectPacker>();
}

namespace {

// Whether the API server applies shardSelector to `type`: nullopt when it cannot tell (yet). A LIST
// of at most one object over the whole hash space says so in metadata.shardInfo. Custom resources'
// lists do not carry shardInfo in 1.37 even though the server filters them, so without it the
// answer comes from behaviour: take any object, then ask for every slot but its own; a server that
// sends it back ignores the selector. With no object to try, it cannot tell.
std::optional<bool> ask_server_filters_shards(kube::Client& client, const kube::ResourceType& type,
                                              const kube::WatcherOptions& scope, const std::string& name) {
  kube::ListOptions options;
  options.label_selector = scope.label_selector;
  options.field_selector = scope.field_selector;
  options.limit = 1;
  auto first_namespace = [](const rapidjson::Document& list) -> std::optional<std::string> {
    const auto* items = kube::find_member(list, "items");
    if (items == nullptr || !items->IsArray() || items->Empty()) return std::nullopt;
    return std::string(kube::ObjectView((*items)[0]).namespace_name());
  };
  auto answer = [&](std::optional<bool> applies, const char* how) {
    log(spdlog::level::info,
        !applies   ? "Cannot tell yet whether the API server filters by shard; asking with shardSelector and "
                     "filtering here too"
        : *applies ? "The API server filters by shard (shardSelector)"
                   : "The API server ignores shardSelector (ShardedListAndWatch off?); filtering here",
        {{"informer", name}, {"how", how}});
    return applies;
  };
  options.shard_selector = shard_selector({0}, 1);
  auto whole = client.list(type, "", options);
  if (!whole) {
    log(spdlog::level::warn, "Cannot ask the API server whether it filters by shard",
        {{"informer", name}, {"error", whole.error().to_string()}});
    return std::nullopt;
  }
  const auto* metadata = kube::find_member(whole.value(), "metadata");
  if (metadata != nullptr && kube::find_member(*metadata, "shardInfo") != nullptr)
    return answer(true, "shardInfo");
  const auto sample = first_namespace(whole.value());
  if (!sample) return answer(std::nullopt, "no object to try");
  const int own = shard_slot(*sample);
  std::vector<int> others;
  for (int slot = 0; slot < kShardSlots; ++slot) {
    if (slot != own) others.push_back(slot);
  }
  options.shard_selector = shard_selector(others);
  auto rest = client.list(type, "", options);
  if (!rest) return std::nullopt;
  const auto next = first_namespace(rest.value());
  return answer(!next || shard_slot(*next) != own, "an object of one slot asked for with the others");
}

}  // namespace

std::optional<bool> InformerSet::server_filters_shards() const {
  std::shared_lock lock(mutex_);
  return server_filters_shards_;
}

std::vector<std::shared_ptr<Informer>> InformerSet::all_informers() const {
  std::shared_lock lock(mutex_);
  if (!sharded_) return informers_;
  std::vector<std::shared_ptr<Informer>> informers;
  informers.reserve(slot_informers_.size());
  for (const auto& [slot, informer] : slot_informers_) informers.push_back(informer);
  return informers;
}

void InformerSet::start() {
  {
    std::unique_lock lock(mutex_);
    started_ = true;
  }
  for (auto& informer : all_informers()) informer->start();
}

void InformerSet::stop() {
  {
    std::unique_lock lock(mutex_);
    started_ = false;
  }
  for (auto& informer : all_informers()) informer->stop();
}

std::vector<std::string> InformerSet::problems() const {
  std::vector<std::string> found;
  for (const auto& informer : all_informers()) {
    for (auto& problem : informer->problems()) found.push_back(std::move(problem));
  }
  return found;
}

bool InformerSet::has_synced() const {
  const auto informers = all_informers();
  return std::all_of(informers.begin(), informers.end(),
                     [](const auto& informer) { return informer->has_synced(); });
}

void InformerSet::on_synced(std::function<void()> callback) {
  const auto informers = all_informers();
  if (informers.empty()) return callback();
  // Each informer calls back once; the last of them completes the set.
  auto remaining = std::make_shared<std::atomic<std::size_t>>(informers.size());
  auto synced = std::make_shared<std::function<void()>>(std::move(callback));
  for (const auto& informer : informers) {
    informer->on_synced([remaining, synced] {
      if (--*remaining == 0) (*synced)();
    });
  }
}

void InformerSet::subscribe(EventHandler handler) {
  {
    std::unique_lock lock(mutex_);
    handlers_.push_back(handler);
  }
  for (auto& informer : all_informers()) informer->subscribe(handler);
}

std::shared_ptr<Informer> InformerSet::add_slot(int slot) {
  if (!sharded_) throw std::logic_error("InformerSet::add_slot on an informer set that is not sharded");
  if (!server_filters_shards()) {
    auto answer = ask_server_filters_shards(*client_, type_, options_.watcher, name_);
    std::unique_lock lock(mutex_);
    if (answer) server_filters_shards_ = answer;
  }
  std::unique_lock lock(mutex_);
  if (auto found = slot_informers_.find(slot); found != slot_informers_.end()) return found->second;
  InformerOptions options = options_;
  options.name = name_ + "/slot-" + std::to_string(slot);
  // Asked for unless the server is known to ignore it (then it would only lengthen every request).
  if (server_filters_shards_.value_or(true)) options.watcher.shard_selector = shard_selector({slot});
  options.accept = [slot](const kube::ObjectView& object) {
    return shard_slot(object.namespace_name()) == slot;
  };
  auto informer = std::make_shared<Informer>(kube::make_client_watch_source(client_, type_, ""), options);
  for (const auto& handler : handlers_) informer->subscribe(handler);
  slot_informers_.emplace(slot, informer);
  if (started_) informer->start();
  return informer;
}

void InformerSet::remove_slot(int slot) {
  std::shared_ptr<Informer> informer;
  {
    std::unique_lock lock(mutex_);
    auto found = slot_informers_.find(slot);
    if (found == slot_informers_.end()) return;
    informer = std::move(found->second);
    slot_informers_.erase(found);
  }
  // Outside the lock: stopping joins the watch thread, which may be delivering an event whose handler
  // reads this set.
  informer->stop();
}

bool InformerSet::slot_synced(int slot) const {
  std::shared_lock lock(mutex_);
  auto found = slot_informers_.find(slot);
  return found != slot_informers_.end() && found->second->has_synced();
}

void InformerSet::redeliver_slot(int slot) {
  std::shared_ptr<Informer> informer;
  {
    std::shared_lock lock(mutex_);
    auto found = slot_informers_.find(slot);
    if (found == slot_informers_.end()) return;
    informer = found->second;
  }
  informer->resync();
}

void InformerSet::watched_as(WatchedAs role) {
  (role == WatchedAs::primary ? watched_as_primary_ : watched_as_owned_) = true;
}

bool InformerSet::redelivered_on_open() const { return watched_as_primary_ || !watched_as_owned_; }

std::vector<int> InformerSet::slots() const {
  std::shared_lock lock(mutex_);
  std::vector<int> slots;
  for (const auto& [slot, informer] : slot_informers_) slots.push_back(slot);
  return slots;
}

bool InformerSet::in_scope(std::string_view namespace_name) const {
  if (sharded_) {
    std::shared_lock lock(mutex_);
    return slot_informers_.contains(shard_slot(namespace_name));
  }
  return all_namespaces_ ||
         std::find(namespaces_.begin(), namespaces_.end(), namespace_name) != namespaces_.end();
}

std::shared_ptr<Informer> InformerSet::informer_for(std::string_view namespace_name) const {
  std::shared_lock lock(mutex_);
  if (sharded_) {
    auto found = slot_informers_.find(shard_slot(namespace_name));
    return found != slot_informers_.end() ? found->second : nullptr;
  }
  if (all_namespaces_) return informers_.front();
  for (std::size_t index = 0; index < namespaces_.size(); ++index) {
    if (namespaces_[index] == namespace_name) return informers_[index];
  }
  return nullptr;
}

ObjectPointer InformerSet::get(const ObjectKey& key) const {
  const auto informer = informer_for(key.namespace_name);
  return informer ? informer->cache().get(key) : nullptr;
}

std::vector<ObjectPointer> InformerSet::list() const {
  std::vector<ObjectPointer> objects;
  for (const auto& informer : all_informers()) {
    auto listed = informer->cache().list();
    objects.insert(objects.end(), listed.begin(), listed.end());
  }
  return objects;
}

std::vector<ObjectPointer> InformerSet::list(std::string_view namespace_name) const {
  const auto informer = informer_for(namespace_name);
  return informer ? informer->cache().list_namespace(namespace_name) : std::vector<ObjectPointer>{};
}

void InformerSet::for_each(const std::function<void(const ObjectPointer&)>& visit) const {
  for (const auto& informer : all_informers()) informer->cache().for_each(visit);
}

std::vector<ObjectKey> InformerSet::keys() const {
  std::vector<ObjectKey> keys;
  for (const auto& informer : all_informers()) {
    auto cached = informer->cache().keys();
    keys.insert(keys.end(), std::make_move_iterator(cached.begin()), std::make_move_iterator(cached.end()));
  }
  return keys;
}

std::vector<ObjectPointer> InformerSet::list_by_controller_owner(std::string_view owner_uid) const {
  std::vector<ObjectPointer> objects;
  for (const auto& informer : all_informers()) {
    auto listed = informer->cache().list_by_controller_owner(owner_uid);
    objects.insert(objects.end(), listed.begin(), listed.end());
  }
  return objects;
}

void InformerSet::index_label(std::string_view key) {
  if (sharded_) {
    std::unique_lock lock(mutex_);
    options_.cache.indexed_labels.emplace_back(key);
  }
  for (const auto& informer : all_informers()) informer->index_label(key);
}

std::size_t InformerSet::count_by_label(std::string_view key, std::string_view value) const {
  std::size_t total = 0;
  for (const auto& informer : all_informers()) total += informer->cache().count_by_label(key, value);
  return total;
}

std::size_t InformerSet::size() const {
  std::size_t total = 0;
  for (const auto& informer : all_informers()) total += informer->cache().size();
  return total;
}

std::string InformerSet::begin_write(const ObjectKey& key) {
  const auto informer = informer_for(key.namespace_name);
  return informer ? informer->begin_write(key) : std::string();
}

void InformerSet::end_write(const ObjectKey& key) {
  if (const auto informer = informer_for(key.namespace_name)) informer->end_write(key);
}

ObjectPointer InformerSet::store_written(const kube::JsonValue& returned_object,
                                         std::string_view sent_at_version) {
  const auto informer = informer_for(kube::ObjectView(returned_object).namespace_name());
  return informer ? informer->store_written(returned_object, sent_at_version) : nullptr;
}

void InformerSet::store_deleted(const ObjectKey& key, std::string_view sent_at_version) {
  if (const auto informer = informer_for(key.namespace_name)) informer->store_deleted(key, sent_at_version);
}

}  // namespace myop::runtime
