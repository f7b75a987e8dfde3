#pragma once
// One kind watched in a set of namespaces: an Informer per namespace, or one Informer for all
// namespaces when the set is empty. The operator's tenancy (--namespaces) needs it: a team's
// instance watches only its namespaces and needs no cluster-wide read.
//
// It is one Runnable (synced when every informer is) and one EventSource (events of all of them).
// Reads and read-your-own-writes are routed to the informer of the object's namespace.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/resource.h"
#include "runtime/informer.h"

namespace myop::runtime {

class InformerSet final : public Runnable, public EventSource {
 public:
  // `namespaces` empty: all namespaces. options.name and options.namespace_name are set per informer.
  InformerSet(const std::shared_ptr<kube::Client>& client, const kube::ResourceType& type,
              std::vector<std::string> namespaces, InformerOptions options);

  std::string name() const override { return name_; }
  void start() override;
  void stop() override;
  bool has_synced() const override;
  void on_synced(std::function<void()> callback) override;
  void subscribe(EventHandler handler) override;

  // Null when the object is not cached, or its namespace is out of scope.
  ObjectPointer get(const ObjectKey& key) const;
  std::vector<ObjectPointer> list() const;
  // Every cached object, one parsed at a time (ObjectCache::for_each).
  void for_each(const std::function<void(const ObjectPointer&)>& visit) const;
  std::vector<ObjectKey> keys() const;
  std::vector<ObjectPointer> list_by_controller_owner(std::string_view owner_uid) const;
  std::size_t count_by_label(std::string_view key, std::string_view value) const;
  // Indexes label `key` in every informer's cache (for count_by_label).
  void index_label(std::string_view key);
  std::size_t size() const;

  // Read-your-own-writes, routed by namespace (see Informer::store_written); for the cached writer.
  std::string cached_resource_version(const ObjectKey& key) const;
  ObjectPointer store_written(const kube::JsonValue& returned_object, std::string_view sent_at_version);
  void store_deleted(const ObjectKey& key, std::string_view sent_at_version);

  // Whether objects of `namespace_name` are watched.
  bool in_scope(std::string_view namespace_name) const;

 private:
  const Informer* informer_for(std::string_view namespace_name) const;
  Informer* informer_for(std::string_view namespace_name);

  std::string name_;
  bool all_namespaces_;
  std::vector<std::string> namespaces_;  // parallel to informers_
  std::vector<std::shared_ptr<Informer>> informers_;
};

}  // namespace myop::runtime
