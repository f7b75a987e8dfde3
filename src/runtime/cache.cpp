#include "runtime/cache.h"

#include <mutex>

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

ObjectPointer ObjectCache::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto position = objects_.find(key);
  return position == objects_.end() ? nullptr : position->second.object;
}

std::vector<ObjectPointer> ObjectCache::list() const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectPointer> result;
  result.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) result.push_back(entry.object);
  return result;
}

std::vector<ObjectPointer> ObjectCache::list_namespace(std::string_view namespace_name) const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectPointer> result;
  for (auto position = objects_.lower_bound(ObjectKey{std::string(namespace_name), ""});
       position != objects_.end() && position->first.namespace_name == namespace_name; ++position) {
    result.push_back(position->second.object);
  }
  return result;
}

std::vector<ObjectPointer> ObjectCache::resolve_locked(const KeySet& keys) const {
  std::vector<ObjectPointer> result;
  result.reserve(keys.size());
  for (const ObjectKey* key : keys) {
    if (auto position = objects_.find(*key); position != objects_.end())
      result.push_back(position->second.object);
  }
  return result;
}

std::vector<ObjectPointer> ObjectCache::list_by_controller_owner(std::string_view owner_uid) const {
  std::shared_lock lock(mutex_);
  auto position = by_owner_.find(std::string(owner_uid));
  return position == by_owner_.end() ? std::vector<ObjectPointer>{} : resolve_locked(position->second);
}

std::vector<ObjectPointer> ObjectCache::list_by_label(std::string_view key, std::string_view value) const {
  std::shared_lock lock(mutex_);
  auto position = by_label_.find(label_index_key(key, value));
  return position == by_label_.end() ? std::vector<ObjectPointer>{} : resolve_locked(position->second);
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

ObjectPointer ObjectCache::put(ObjectPointer object) {
  const ObjectKey key = key_of_object(*object);
  std::unique_lock lock(mutex_);
  auto [position, inserted] = objects_.try_emplace(key);
  ObjectPointer previous = inserted ? nullptr : position->second.object;
  if (previous) unindex_locked(&position->first, *previous);
  position->second.object = std::move(object);
  index_locked(&position->first, *position->second.object);
  return previous;
}

ObjectPointer ObjectCache::erase(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  auto position = objects_.find(key);
  if (position == objects_.end()) return nullptr;
  ObjectPointer previous = std::move(position->second.object);
  unindex_locked(&position->first, *previous);
  objects_.erase(position);
  return previous;
}

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

void ObjectCache::index_locked(const ObjectKey* key, const kube::Object& object) {
  if (auto owner = object.view().controller_owner()) by_owner_[owner->uid].insert(key);
  if (!options_.index_labels) return;
  const auto* labels = object.view().find({"metadata", "labels"});
  if (!labels || !labels->IsObject()) return;
  for (auto member = labels->MemberBegin(); member != labels->MemberEnd(); ++member) {
    if (!member->value.IsString()) continue;
    by_label_[label_index_key({member->name.GetString(), member->name.GetStringLength()},
                              {member->value.GetString(), member->value.GetStringLength()})]
        .insert(key);
  }
}

void ObjectCache::unindex_locked(const ObjectKey* key, const kube::Object& object) {
  auto remove = [&](auto& index, const std::string& index_key) {
    auto position = index.find(index_key);
    if (position == index.end()) return;
    position->second.erase(key);
    if (position->second.empty()) index.erase(position);
  };
  if (auto owner = object.view().controller_owner()) remove(by_owner_, owner->uid);
  if (!options_.index_labels) return;
  const auto* labels = object.view().find({"metadata", "labels"});
  if (!labels || !labels->IsObject()) return;
  for (auto member = labels->MemberBegin(); member != labels->MemberEnd(); ++member) {
    if (!member->value.IsString()) continue;
    remove(by_label_, label_index_key({member->name.GetString(), member->name.GetStringLength()},
                                      {member->value.GetString(), member->value.GetStringLength()}));
  }
}

}  // namespace myop::runtime
