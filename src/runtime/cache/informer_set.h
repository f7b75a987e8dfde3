#pragma once
// One kind watched in a set of namespaces: an Informer per namespace, or one Informer for all
// namespaces when the set is empty. The operator's tenancy (--namespaces) needs it: a team's
// instance watches only its namespaces and needs no cluster-wide read.
//
// Sharded (--sharding, runtime/sharding/shard_coordinator.h), it is instead an Informer per shard slot this
// replica owns or is about to own, added and removed while running: each asks the API server for its
// slot's hash range (shardSelector, when the server applies it) and keeps only objects whose namespace
// hashes into the slot, so a slot that changes hands is listed alone and nothing else is re-listed.
//
// It is one Runnable (synced when every informer is) and one EventSource (events of all of them).
// Reads and read-your-own-writes are routed to the informer of the object's namespace (or slot).
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/resource.h"
#include "runtime/cache/informer.h"

namespace myop::runtime {

class InformerSet final : public Runnable, public EventSource {
 public:
  // `namespaces` empty: all namespaces. options.name and options.namespace_name are set per informer.
  InformerSet(const std::shared_ptr<kube::Client>& client, const kube::ResourceType& type,
              std::vector<std::string> namespaces, InformerOptions options);
  // Sharded: no informer until add_slot(). add_slot() asks the API server whether it applies
  // shardSelector (metadata.shardInfo, or its behaviour for custom resources, whose lists lack
  // shardInfo in 1.37) until it has an answer; the slot informers send the selector unless the server
  // is known to ignore it, and filter on the client either way, so no answer is ever needed for
  // correctness.
  struct Sharded {};
  InformerSet(std::shared_ptr<kube::Client> client, kube::ResourceType type, Sharded sharded,
              InformerOptions options);

  std::string name() const override { return name_; }
  void start() override;
  void stop() override;
  bool has_synced() const override;
  void on_synced(std::function<void()> callback) override;
  void subscribe(EventHandler handler) override;
  // Its informers' (Informer::problems).
  std::vector<std::string> problems() const override;

  // Null when the object is not cached, or its namespace is out of scope.
  ObjectPointer get(const ObjectKey& key) const;
  std::vector<ObjectPointer> list() const;
  // The cached objects of one namespace, from its informer's namespace-ordered store (no scan of the
  // other namespaces); empty when the namespace is out of scope.
  std::vector<ObjectPointer> list(std::string_view namespace_name) const;
  // Every cached object, one parsed at a time (ObjectCache::for_each).
  void for_each(const std::function<void(const ObjectPointer&)>& visit) const;
  std::vector<ObjectKey> keys() const;
  std::vector<ObjectPointer> list_by_controller_owner(std::string_view owner_uid) const;
  std::size_t count_by_label(std::string_view key, std::string_view value) const;
  // Indexes label `key` in every informer's cache (for count_by_label).
  void index_label(std::string_view key);
  std::size_t size() const;

  // Read-your-own-writes, routed by namespace (see Informer::store_written); for the cached writer.
  std::string begin_write(const ObjectKey& key);
  void end_write(const ObjectKey& key);
  ObjectPointer store_written(const kube::JsonValue& returned_object, std::string_view sent_at_version);
  void store_deleted(const ObjectKey& key, std::string_view sent_at_version);

  // Whether objects of `namespace_name` are watched.
  bool in_scope(std::string_view namespace_name) const;

  // Sharded only. add_slot() makes the slot's informer (started if the set is) and returns it, so the
  // caller can wait for it to sync; a slot already there is returned as it is. remove_slot() stops the
  // slot's informer and drops its cache; its subscribers are told nothing (the objects did not change,
  // this replica stopped looking at them).
  bool sharded() const { return sharded_; }
  std::shared_ptr<Informer> add_slot(int slot);
  void remove_slot(int slot);
  bool slot_synced(int slot) const;
  // Delivers every cached object of the slot again, as resync events (its work may start now).
  void redeliver_slot(int slot);
  // How a controller watches this set, which decides whether the shard coordinator redelivers its
  // slots when they open. A set some controller watches as its primary kind is redelivered. A set
  // watched only as an owned kind is not: the reconcile of every primary object reads the owned
  // objects from the cache anyway, and redelivering them too would enqueue each owner again after
  // its first reconcile may have finished (a second reconcile for nothing). Sets no controller
  // watches are redelivered, for whoever else subscribed.
  enum class WatchedAs { primary, owned };
  void watched_as(WatchedAs role);
  bool redelivered_on_open() const;
  std::vector<int> slots() const;
  // Whether the API server confirmed it filters by shard (nullopt: not asked yet, or it could not be).
  std::optional<bool> server_filters_shards() const;

 private:
  std::shared_ptr<Informer> informer_for(std::string_view namespace_name) const;
  std::vector<std::shared_ptr<Informer>> all_informers() const;

  std::string name_;
  bool all_namespaces_;
  bool sharded_ = false;
  std::vector<std::string> namespaces_;  // parallel to informers_ (not sharded)

  // Sharded: what makes a slot's informer.
  std::shared_ptr<kube::Client> client_;
  kube::ResourceType type_;
  InformerOptions options_;
  std::optional<bool> server_filters_shards_;
  std::atomic<bool> watched_as_primary_{false};
  std::atomic<bool> watched_as_owned_{false};

  mutable std::shared_mutex mutex_;  // guards the members below (they change only when sharded)
  std::vector<std::shared_ptr<Informer>> informers_;
  std::map<int, std::shared_ptr<Informer>> slot_informers_;
  std::vector<EventHandler> handlers_;
  bool started_ = false;
};

}  // namespace myop::runtime
