#pragma once
// The in-memory store an informer fills, ordered by namespace/name, indexed by controller owner UID and
// by label.
//
// Objects are kept packed (kube/packed_object.h: the JSON text compressed against the first object
// stored, about 120 bytes per Deployment instead of a 4.3 KiB tree). The objects used last (stored or
// read; at most `hot_objects`) are kept parsed instead, so the reads of one reconcile and the events
// that follow a write neither unpack nor parse; an object is packed when it cools, so versions that
// follow each other quickly are not packed at all. Any other read unpacks and parses (about 12 us
// for a Deployment). Readers share parsed objects; nothing changes an object once it is stored (a
// change stores a new one). The resourceVersion and the index entries are kept unpacked next to the
// object, so comparing versions and moving index entries need no unpacking.
//
// Readers never block the watch for long: a read takes a shared lock and copies the packed bytes;
// unpacking happens after the lock is released. Packing happens before a writer takes the lock.
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kube/object.h"
#include "kube/packed_object.h"
#include "runtime/queue/object_key.h"

namespace myop::runtime {

using ObjectPointer = std::shared_ptr<const kube::Object>;

struct CacheOptions {
  // The label keys whose values are indexed (key=value -> objects) for list_by_label and
  // count_by_label. Each indexed key costs about 200 bytes per distinct value, so only keys someone
  // looks up are indexed; more can be added with index_label().
  std::vector<std::string> indexed_labels;
  // How many objects are also kept parsed (the most recently stored or read). Each costs its tree
  // (4-8 KiB for a Deployment); 0 keeps none.
  std::size_t hot_objects = 128;
  // The packer the cache packs with; null: a packer of its own. Caches of one kind may share one (an
  // informer set's caches do): one compression context and one dictionary for all of them, about
  // 70 KiB each saved, and the dictionary fits them as well as their own would.
  std::shared_ptr<kube::ObjectPacker> packer = nullptr;
};

class ObjectCache {
 public:
  explicit ObjectCache(CacheOptions options = {});

  ObjectPointer get(const ObjectKey& key) const;
  // The resourceVersion stored for `key`, "" when absent.
  std::string resource_version(const ObjectKey& key) const;
  std::vector<ObjectPointer> list() const;
  // Calls `visit` with every object in key order, unpacking one at a time (and not making it hot):
  // a pass over all objects that holds one parsed object at once, where list() parses them all
  // together (about 4.8 KiB per Deployment: 48 MiB at 10,000).
  void for_each(const std::function<void(const ObjectPointer&)>& visit) const;
  std::vector<ObjectPointer> list_namespace(std::string_view namespace_name) const;
  std::vector<ObjectPointer> list_by_controller_owner(std::string_view owner_uid) const;
  // By an indexed label; by reading every object when `key` is not indexed.
  std::vector<ObjectPointer> list_by_label(std::string_view key, std::string_view value) const;
  std::size_t count_by_label(std::string_view key, std::string_view value) const;
  std::vector<ObjectKey> keys() const;
  std::size_t size() const;
  // Bytes of packed objects held (not counting the index, the keys or the dictionary).
  std::size_t packed_bytes() const;

  // Inserts or replaces.
  void put(ObjectPointer object);
  // Inserts or replaces; returns the previous object (null when new).
  ObjectPointer exchange(ObjectPointer object);
  // Removes; false when absent.
  bool erase(const ObjectKey& key);
  // Removes; returns the removed object (null when absent).
  ObjectPointer take(const ObjectKey& key);

  // Indexes label `key` from now on (objects already stored are read once to file them).
  void index_label(std::string_view key);

  // Relist support without a second set of keys: mark(key, epoch) tags an entry as seen by the
  // relist `epoch`; unmarked(epoch) names the entries that relist did not see.
  void mark(const ObjectKey& key, std::uint32_t epoch);
  std::vector<ObjectKey> unmarked(std::uint32_t epoch) const;

 private:
  // Indexes point at the keys stored in objects_ (map nodes do not move), which costs a pointer
  // per index entry instead of a copy of two strings.
  struct KeyPointerLess {
    bool operator()(const ObjectKey* left, const ObjectKey* right) const { return *left < *right; }
  };
  using KeySet = std::set<const ObjectKey*, KeyPointerLess>;
  using Index = std::unordered_map<std::string, KeySet>;

  using HotList = std::list<const ObjectKey*>;  // most recently used first

  // An entry holds its object parsed (hot), packed, or both (hot and clean). `packed` and `hot` change
  // under the exclusive lock, or under the shared lock and hot_mutex_ (a read that makes an object
  // hot, the eviction that packs one); they are read under the exclusive lock, or the shared lock and
  // hot_mutex_.
  struct Entry {
    mutable std::string packed;  // empty while the hot object is newer (dirty)
    std::string resource_version;
    std::uint32_t epoch = 0;
    mutable ObjectPointer hot;
    mutable HotList::iterator hot_position;
    // The index entries this object is filed under: nodes of by_owner_ and by_label_, whose
    // addresses do not change while they exist.
    Index::value_type* owner = nullptr;
    std::vector<Index::value_type*> labels;
  };

  // What a bulk read takes under the shared lock: the hot object, or else the packed form to unpack
  // after the lock is released (bulk reads do not make objects hot: a list would flush them all).
  struct Found {
    ObjectPointer hot;
    std::string packed;
  };

  ObjectPointer unpack(const std::string& packed) const;
  // The packed form of an object (outside any lock: packing takes a few microseconds).
  std::string pack(const kube::Object& object) const;
  std::vector<ObjectPointer> resolve_all(std::vector<Found> found) const;
  Found found_locked(const Entry& entry) const;
  // The object of an entry: the hot one, or unpacked and made hot (under the shared lock: a few
  // microseconds, and the key must stay valid).
  ObjectPointer read_locked(const ObjectKey* key, const Entry& entry) const;
  // Stores an object; returns what it replaced (empty when new).
  Found store(ObjectPointer object);
  std::optional<Found> remove(const ObjectKey& key);
  ObjectPointer resolve(Found found) const;
  // Under mutex_ (either mode) and hot_mutex_. Making one object hot may cool the coldest one, which
  // is packed then if it was dirty.
  void make_hot_locked(const ObjectKey* key, const Entry& entry, ObjectPointer object) const;
  void forget_hot_locked(const Entry& entry) const;
  void index_locked(const ObjectKey* key, const kube::Object& object, Entry& entry);
  void unindex_locked(const ObjectKey* key, Entry& entry);
  bool indexed_locked(std::string_view label_key) const;

  CacheOptions options_;
  std::shared_ptr<kube::ObjectPacker> packer_;  // never null
  mutable std::shared_mutex mutex_;
  std::map<ObjectKey, Entry> objects_;
  // Guards Entry::hot, Entry::hot_position and hot_order_; taken after mutex_, in either mode (a read
  // that unpacked an object makes it hot under the shared lock).
  mutable std::mutex hot_mutex_;
  mutable HotList hot_order_;
  Index by_owner_;
  Index by_label_;  // "key=value"
};

}  // namespace myop::runtime
