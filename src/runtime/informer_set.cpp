#include "runtime/informer_set.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "kube/object.h"

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
  for (const std::string& namespace_name : namespaces_) {
    InformerOptions scoped = options;
    scoped.name = name_ + "/" + namespace_name;
    scoped.namespace_name = namespace_name;
    informers_.push_back(
        std::make_shared<Informer>(kube::make_client_watch_source(client, type, namespace_name), scoped));
  }
}

void InformerSet::start() {
  for (auto& informer : informers_) informer->start();
}

void InformerSet::stop() {
  for (auto& informer : informers_) informer->stop();
}

bool InformerSet::has_synced() const {
  return std::all_of(informers_.begin(), informers_.end(),
                     [](const auto& informer) { return informer->has_synced(); });
}

void InformerSet::on_synced(std::function<void()> callback) {
  if (informers_.empty()) return callback();
  // Each informer calls back once; the last of them completes the set.
  auto remaining = std::make_shared<std::atomic<std::size_t>>(informers_.size());
  auto synced = std::make_shared<std::function<void()>>(std::move(callback));
  for (auto& informer : informers_) {
    informer->on_synced([remaining, synced] {
      if (--*remaining == 0) (*synced)();
    });
  }
}

void InformerSet::subscribe(EventHandler handler) {
  for (auto& informer : informers_) informer->subscribe(handler);
}

bool InformerSet::in_scope(std::string_view namespace_name) const {
  return all_namespaces_ ||
         std::find(namespaces_.begin(), namespaces_.end(), namespace_name) != namespaces_.end();
}

const Informer* InformerSet::informer_for(std::string_view namespace_name) const {
  if (all_namespaces_) return informers_.front().get();
  for (std::size_t index = 0; index < namespaces_.size(); ++index) {
    if (namespaces_[index] == namespace_name) return informers_[index].get();
  }
  return nullptr;
}

Informer* InformerSet::informer_for(std::string_view namespace_name) {
  return const_cast<Informer*>(std::as_const(*this).informer_for(namespace_name));
}

ObjectPointer InformerSet::get(const ObjectKey& key) const {
  const Informer* informer = informer_for(key.namespace_name);
  return informer ? informer->cache().get(key) : nullptr;
}

std::vector<ObjectPointer> InformerSet::list() const {
  std::vector<ObjectPointer> objects;
  for (const auto& informer : informers_) {
    auto listed = informer->cache().list();
    objects.insert(objects.end(), listed.begin(), listed.end());
  }
  return objects;
}

void InformerSet::for_each(const std::function<void(const ObjectPointer&)>& visit) const {
  for (const auto& informer : informers_) informer->cache().for_each(visit);
}

std::vector<ObjectKey> InformerSet::keys() const {
  std::vector<ObjectKey> keys;
  for (const auto& informer : informers_) {
    auto cached = informer->cache().keys();
    keys.insert(keys.end(), std::make_move_iterator(cached.begin()), std::make_move_iterator(cached.end()));
  }
  return keys;
}

std::vector<ObjectPointer> InformerSet::list_by_controller_owner(std::string_view owner_uid) const {
  std::vector<ObjectPointer> objects;
  for (const auto& informer : informers_) {
    auto listed = informer->cache().list_by_controller_owner(owner_uid);
    objects.insert(objects.end(), listed.begin(), listed.end());
  }
  return objects;
}

void InformerSet::index_label(std::string_view key) {
  for (const auto& informer : informers_) informer->index_label(key);
}

std::size_t InformerSet::count_by_label(std::string_view key, std::string_view value) const {
  std::size_t total = 0;
  for (const auto& informer : informers_) total += informer->cache().count_by_label(key, value);
  return total;
}

std::size_t InformerSet::size() const {
  std::size_t total = 0;
  for (const auto& informer : informers_) total += informer->cache().size();
  return total;
}

std::string InformerSet::cached_resource_version(const ObjectKey& key) const {
  const Informer* informer = informer_for(key.namespace_name);
  return informer ? informer->cached_resource_version(key) : std::string();
}

ObjectPointer InformerSet::store_written(const kube::JsonValue& returned_object,
                                         std::string_view sent_at_version) {
  Informer* informer = informer_for(kube::ObjectView(returned_object).namespace_name());
  return informer ? informer->store_written(returned_object, sent_at_version) : nullptr;
}

void InformerSet::store_deleted(const ObjectKey& key, std::string_view sent_at_version) {
  if (Informer* informer = informer_for(key.namespace_name)) informer->store_deleted(key, sent_at_version);
}

}  // namespace myop::runtime
