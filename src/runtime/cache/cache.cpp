#include "runtime/cache/cache.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "runtime/logging.h"

namespace myop::runtime {

namespace {

ObjectKey key_of_object(const kube::Object& object) {
  return {std::string(object.namespace_name()), std::string(object.name())};
}

std::string label_index_key(std::string_view key, std::string_view value) {
  std::string result(key);
  result += '=';
  result.append(value);
  return result;
}

}  // namespace

ObjectCache::ObjectCache(CacheOptions options)
    : options_(std::move(options)),
      packer_(options_.packer ? options_.packer : std::make_shared<kube::ObjectPacker>()) {
  options_.packer.reset();  // held in packer_
}

// ---- reading ----

ObjectPointer ObjectCache::unpack(const std::string& packed) const {
  if (packed.empty()) return nullptr;
  auto object = packer_->unpack(packed);
  if (!object) {
    // Only a bug can get here (the packer reads only what it wrote): say so, and read as absent.
    log(spdlog::level::err, "Cached object could not be unpacked", {{"error", object.error().to_string()}});
    return nullptr;
  }
  return std::make_shared<const kube::Object>(std::move(object).value());
}

std::string ObjectCache::pack(const kube::Object& object) const { return packer_->pack(object.json()); }

ObjectPointer ObjectCache::resolve(Found found) const {
  return found.hot ? std::move(found.hot) : unpack(found.packed);
}

std::vector<ObjectPointer> ObjectCache::resolve_all(std::vector<Found> found) const {
  std::vector<ObjectPointer> result;
  result.reserve(found.size());
  for (auto& item : found) {
    if (auto object = resolve(std::move(item))) result.push_back(std::move(object));
  }
  return result;
}

ObjectCache::Found ObjectCache::found_locked(const Entry& entry) const {
  std::lock_guard hot_lock(hot_mutex_);
  if (entry.hot) return {entry.hot, {}};
  return {nullptr, entry.packed};
}

ObjectPointer ObjectCache::read_locked(const ObjectKey* key, const Entry& entry) const {
  std::string packed;
  {
    std::lock_guard hot_lock(hot_mutex_);
    if (entry.hot) {
      hot_order_.splice(hot_order_.begin(), hot_order_, entry.hot_position);
      return entry.hot;
    }
    packed = entry.packed;
  }
  ObjectPointer object = unpack(packed);
  if (object) {
    std::lock_guard hot_lock(hot_mutex_);
    // Another reader may have made it hot meanwhile: then both copies are the same object's.
    if (!entry.hot) make_hot_locked(key, entry, object);
  }
  return object;
}

ObjectPointer ObjectCache::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto position = objects_.find(key);
  return position == objects_.end() ? nullptr : read_locked(&position->first, position->second);
}

std::string ObjectCache::resource_version(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto position = objects_.find(key);
  return position == objects_.end() ? std::string() : position->second.resource_version;
}

std::vector<ObjectPointer> ObjectCache::list() const {
  std::vector<ObjectPointer> objects;
  objects.reserve(size());
  for_each([&objects](const ObjectPointer& object) { objects.push_back(object); });
  return objects;
}

void ObjectCache::for_each(const std::function<void(const ObjectPointer&)>& visit) const {
  std::vector<Found> found;
  {
    std::shared_lock lock(mutex_);
    found.reserve(objects_.size());
    for (const auto& [key, entry] : objects_) found.push_back(found_locked(entry));
  }
  for (auto& item : found) {
    const ObjectPointer object = resolve(std::move(item));
    if (object) visit(object);
  }
}

std::vector<ObjectPointer> ObjectCache::list_namespace(std::string_view namespace_name) const {
  std::vector<Found> found;
  {
    std::shared_lock lock(mutex_);
    for (auto position = objects_.lower_bound(ObjectKey{std::string(namespace_name), ""});
         position != objects_.end() && position->first.namespace_name == namespace_name; ++position) {
      found.push_back(found_locked(position->second));
    }
  }
  return resolve_all(std::move(found));
}

std::vector<ObjectPointer> ObjectCache::list_by_controller_owner(std::string_view owner_uid) const {
  // A reconcile's own children: few, and read again soon, so read like get() (and made hot).
  std::shared_lock lock(mutex_);
  auto index = by_owner_.find(std::string(owner_uid));
  if (index == by_owner_.end()) return {};
  std::vector<ObjectPointer> result;
  result.reserve(index->second.size());
  for (const ObjectKey* key : index->second) {
    if (auto position = objects_.find(*key); position != objects_.end()) {
      if (auto object = read_locked(&position->first, position->second)) result.push_back(std::move(object));
    }
  }
  return result;
}

bool ObjectCache::indexed_locked(std::string_view label_key) const {
  return std::find(options_.indexed_labels.begin(), options_.indexed_labels.end(), label_key) !=
         options_.indexed_labels.end();
}

std::vector<ObjectPointer> ObjectCache::list_by_label(std::string_view key, std::string_view value) const {
  std::vector<Found> found;
  {
    std::shared_lock lock(mutex_);
    if (!indexed_locked(key)) {
      lock.unlock();
      std::vector<ObjectPointer> all = list();
      std::erase_if(all, [&](const ObjectPointer& object) { return object->view().label(key) != value; });
      return all;
    }
    auto index = by_label_.find(label_index_key(key, value));
    if (index == by_label_.end()) return {};
    found.reserve(index->second.size());
    for (const ObjectKey* object_key : index->second) {
      if (auto position = objects_.find(*object_key); position != objects_.end())
        found.push_back(found_locked(position->second));
    }
  }
  return resolve_all(std::move(found));
}

std::size_t ObjectCache::count_by_label(std::string_view key, std::string_view value) const {
  {
    std::shared_lock lock(mutex_);
    if (indexed_locked(key)) {
      auto index = by_label_.find(label_index_key(key, value));
      return index == by_label_.end() ? 0 : index->second.size();
    }
  }
  return list_by_label(key, value).size();
}

std::vector<ObjectKey> ObjectCache::keys() const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectKey> result;
  result.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) result.push_back(key);
  return result;
}

std::size_t ObjectCache::size() const {
  std::shared_lock lock(mutex_);
  return objects_.size();
}

std::size_t ObjectCache::packed_bytes() const {
  std::shared_lock lock(mutex_);
  std::lock_guard hot_lock(hot_mutex_);
  std::size_t total = 0;
  for (const auto& [key, entry] : objects_) total += entry.packed.size();
  return total;
}

// ---- writing ----

ObjectCache::Found ObjectCache::store(ObjectPointer object) {
  ObjectKey key = key_of_object(*object);
  // Kept hot (and packed when it cools), or packed now when nothing is kept hot.
  std::string packed = options_.hot_objects == 0 ? pack(*object) : std::string();
  std::string resource_version(object->resource_version());
  std::unique_lock lock(mutex_);
  auto [position, inserted] = objects_.try_emplace(std::move(key));
  Entry& entry = position->second;
  if (!inserted) unindex_locked(&position->first, entry);
  entry.resource_version = std::move(resource_version);
  index_locked(&position->first, *object, entry);
  Found previous;
  std::lock_guard hot_lock(hot_mutex_);
  previous.hot = entry.hot;
  previous.packed = std::exchange(entry.packed, std::move(packed));
  forget_hot_locked(entry);
  make_hot_locked(&position->first, entry, std::move(object));
  return previous;
}

void ObjectCache::put(ObjectPointer object) { store(std::move(object)); }

ObjectPointer ObjectCache::exchange(ObjectPointer object) { return resolve(store(std::move(object))); }

std::optional<ObjectCache::Found> ObjectCache::remove(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  auto position = objects_.find(key);
  if (position == objects_.end()) return std::nullopt;
  Entry& entry = position->second;
  unindex_locked(&position->first, entry);
  Found removed;
  removed.packed = std::move(entry.packed);
  {
    std::lock_guard hot_lock(hot_mutex_);
    removed.hot = entry.hot;
    forget_hot_locked(entry);
  }
  objects_.erase(position);
  return removed;
}

bool ObjectCache::erase(const ObjectKey& key) { return remove(key).has_value(); }

ObjectPointer ObjectCache::take(const ObjectKey& key) {
  auto removed = remove(key);
  return removed ? resolve(std::move(*removed)) : nullptr;
}

void ObjectCache::make_hot_locked(const ObjectKey* key, const Entry& entry, ObjectPointer object) const {
  if (options_.hot_objects == 0) return;
  entry.hot = std::move(object);
  hot_order_.push_front(key);
  entry.hot_position = hot_order_.begin();
  while (hot_order_.size() > options_.hot_objects) {
    const ObjectKey* coldest = hot_order_.back();
    // Every key in hot_order_ names a live entry: store and remove take it out before it goes.
    const Entry& cooling = objects_.find(*coldest)->second;
    if (cooling.packed.empty()) cooling.packed = pack(*cooling.hot);
    cooling.hot.reset();
    hot_order_.pop_back();
  }
}

void ObjectCache::forget_hot_locked(const Entry& entry) const {
  if (!entry.hot) return;
  hot_order_.erase(entry.hot_position);
  entry.hot.reset();
}

// ---- relists and indexes ----

void ObjectCache::mark(const ObjectKey& key, std::uint32_t epoch) {
  std::unique_lock lock(mutex_);
  if (auto position = objects_.find(key); position != objects_.end()) position->second.epoch = epoch;
}

std::vector<ObjectKey> ObjectCache::unmarked(std::uint32_t epoch) const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectKey> result;
  for (const auto& [key, entry] : objects_) {
    if (entry.epoch != epoch) result.push_back(key);
  }
  return result;
}

void ObjectCache::index_label(std::string_view key) {
  std::vector<Found> found;
  {
    std::unique_lock lock(mutex_);
    if (indexed_locked(key)) return;
    options_.indexed_labels.emplace_back(key);
    found.reserve(objects_.size());
    for (const auto& [object_key, entry] : objects_) found.push_back(found_locked(entry));
  }
  // Refiled one by one under the lock; an object replaced meanwhile was filed by its own put().
  for (ObjectPointer& object : resolve_all(std::move(found))) {
    std::unique_lock lock(mutex_);
    auto position = objects_.find(key_of_object(*object));
    if (position == objects_.end() || position->second.resource_version != object->resource_version())
      continue;
    unindex_locked(&position->first, position->second);
    index_locked(&position->first, *object, position->second);
  }
}

void ObjectCache::index_locked(const ObjectKey* key, const kube::Object& object, Entry& entry) {
  if (auto owner = object.view().controller_owner()) {
    auto& node = *by_owner_.try_emplace(owner->uid).first;
    node.second.insert(key);
    entry.owner = &node;
  }
  entry.labels.clear();
  for (const std::string& label_key : options_.indexed_labels) {
    auto value = object.view().label(label_key);
    if (!value) continue;
    auto& node = *by_label_.try_emplace(label_index_key(label_key, *value)).first;
    if (node.second.insert(key).second) entry.labels.push_back(&node);
  }
  entry.labels.shrink_to_fit();
}

void ObjectCache::unindex_locked(const ObjectKey* key, Entry& entry) {
  auto remove_from = [&](Index& index, Index::value_type* node) {
    node->second.erase(key);
    if (node->second.empty()) index.erase(index.find(node->first));
  };
  if (entry.owner != nullptr) remove_from(by_owner_, std::exchange(entry.owner, nullptr));
  for (auto* node : entry.labels) remove_from(by_label_, node);
  entry.labels.clear();
}

}  // namespace myop::runtime
