#pragma once
// The in-memory store an informer fills: immutable object snapshots shared with readers
// (shared_ptr<const Object>), ordered by namespace/name, indexed by controller owner UID and by label.
//
// Readers never block the watch for long: a read takes a shared lock and copies pointers only.
// Objects are never modified in place; a change swaps the pointer, so a reader holding an old
// snapshot keeps a consistent object.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kube/object.h"
#include "runtime/object_key.h"

namespace myop::runtime {

using ObjectPointer = std::shared_ptr<const kube::Object>;

struct CacheOptions {
  // Index every label (key=value). Off saves memory when nothing looks objects up by label.
  bool index_labels = true;
};

class ObjectCache {
 public:
  explicit ObjectCache(CacheOptions options = {}) : options_(options) {}

  ObjectPointer get(const ObjectKey& key) const;
  std::vector<ObjectPointer> list() const;
  std::vector<ObjectPointer> list_namespace(std::string_view namespace_name) const;
  std::vector<ObjectPointer> list_by_controller_owner(std::string_view owner_uid) const;
  std::vector<ObjectPointer> list_by_label(std::string_view key, std::string_view value) const;
  std::vector<ObjectKey> keys() const;
  std::size_t size() const;

  // Inserts or replaces; returns the previous object (null when new).
  ObjectPointer put(ObjectPointer object);
  // Removes; returns the removed object (null when absent).
  ObjectPointer erase(const ObjectKey& key);

  // Relist support without a second set of keys: mark(key, epoch) tags an entry as seen by the
  // relist `epoch`; unmarked(epoch) names the entries that relist did not see.
  void mark(const ObjectKey& key, std::uint32_t epoch);
  std::vector<ObjectKey> unmarked(std::uint32_t epoch) const;

 private:
  struct Entry {
    ObjectPointer object;
    std::uint32_t epoch = 0;
  };
  // Indexes point at the keys stored in objects_ (map nodes do not move), which costs a pointer
  // per index entry instead of a copy of two strings.
  struct KeyPointerLess {
    bool operator()(const ObjectKey* left, const ObjectKey* right) const { return *left < *right; }
  };
  using KeySet = std::set<const ObjectKey*, KeyPointerLess>;

  void index_locked(const ObjectKey* key, const kube::Object& object);
  void unindex_locked(const ObjectKey* key, const kube::Object& object);
  std::vector<ObjectPointer> resolve_locked(const KeySet& keys) const;

  CacheOptions options_;
  mutable std::shared_mutex mutex_;
  std::map<ObjectKey, Entry> objects_;
  std::unordered_map<std::string, KeySet> by_owner_;
  std::unordered_map<std::string, KeySet> by_label_;  // "key=value"
};

}  // namespace myop::runtime
