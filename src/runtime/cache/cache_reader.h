#pragma once
// A reconciler's read-only view of one kind's cache: the objects a controller watches, as kube-rs's
// reflector Store and controller-runtime's cached client reads give them. It is what the controller
// builder (runtime/controller/builder.h) hands out for each kind it watches, so a reconciler reads the very
// cache its events come from, in the scope (namespaces, selectors, shard slots) the builder chose for it.
// Writes go through the manager's Writer, which updates the cache behind this view (read-your-own-
// writes), never through it.
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/resource.h"
#include "runtime/cache/informer_set.h"

namespace myop::runtime {

class CacheReader {
 public:
  CacheReader(kube::ResourceType type, std::shared_ptr<InformerSet> informers)
      : type_(std::move(type)), informers_(std::move(informers)) {
    if (!informers_) throw std::invalid_argument("CacheReader: no cache for " + type_.qualified_resource());
  }

  // The kind read.
  const kube::ResourceType& type() const { return type_; }
  // Null when not cached (or out of scope).
  ObjectPointer get(const ObjectKey& key) const { return informers_->get(key); }
  std::vector<ObjectPointer> list() const { return informers_->list(); }
  // One namespace's objects, without reading the others.
  std::vector<ObjectPointer> list(std::string_view namespace_name) const {
    return informers_->list(namespace_name);
  }
  // Every object, one parsed at a time.
  void for_each(const std::function<void(const ObjectPointer&)>& visit) const { informers_->for_each(visit); }
  std::vector<ObjectKey> keys() const { return informers_->keys(); }
  std::vector<ObjectPointer> list_by_controller_owner(std::string_view owner_uid) const {
    return informers_->list_by_controller_owner(owner_uid);
  }
  std::size_t count_by_label(std::string_view key, std::string_view value) const {
    return informers_->count_by_label(key, value);
  }
  // Indexes label `key` for count_by_label (a read-side index; it changes no object).
  void index_label(std::string_view key) const { informers_->index_label(key); }
  std::size_t size() const { return informers_->size(); }
  bool has_synced() const { return informers_->has_synced(); }

 private:
  kube::ResourceType type_;
  std::shared_ptr<InformerSet> informers_;
};

}  // namespace myop::runtime
