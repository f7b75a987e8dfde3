#pragma once
// The cached writer: every write of a controller goes through it, and every write's answer goes into
// the caches of its kind before the call returns (read-your-own-writes by construction). A reconcile
// that wrote a Deployment and is requeued at once reads the Deployment it wrote, not the one before,
// so it does not write again.
//
// Before sending, the writer notes the resourceVersion each informer caching the kind holds for the
// object; the answer replaces it only in caches that still hold that version (a version the cache
// held before the request was sent is older than the answer, so nothing can go back in time; one
// that moved on already has our write or something newer from the watch). Informers whose selectors
// the written object no longer matches drop it.
//
// A fence (sharding: runtime/sharding/shard_gate.h) is asked before every request; when it refuses, nothing
// is sent and its error is returned.
//
// Every verb returns the object as stored (the cache's snapshot when a cache took it), or the API
// error unchanged, so callers can tell a 409 from a 404 from a real failure.
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/errors.h"
#include "kube/object.h"
#include "kube/resource.h"
#include "runtime/cache/cache.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/queue/object_key.h"
#include "runtime/sharding/shard_gate.h"

namespace myop::runtime {

struct ApplyOptions {
  // Take ownership of fields another manager holds (the controller owns what it applies; a hand
  // edit is put back).
  bool force = true;
  std::string subresource;  // "" or "status"
};

class Writer {
 public:
  Writer(std::shared_ptr<kube::Client> client, std::shared_ptr<InformerRegistry> informers,
         std::string field_manager);

  // Server-side apply of `object` (apiVersion, kind, metadata.name and, when namespaced, namespace).
  kube::Result<ObjectPointer> apply(const kube::ResourceType& type, const kube::Object& object,
                                    const ApplyOptions& options = {}, std::stop_token stop = {});
  kube::Result<ObjectPointer> create(const kube::ResourceType& type, const kube::Object& object,
                                     std::stop_token stop = {});
  kube::Result<ObjectPointer> patch(const kube::ResourceType& type, const ObjectKey& key,
                                    kube::PatchType patch_type, std::string_view body,
                                    std::string_view subresource = {}, std::stop_token stop = {});
  // metadata.finalizers replaced by `finalizers`, on the condition that the object is still at the
  // resourceVersion of `current` (409 Conflict otherwise: someone else changed the list meanwhile).
  kube::Result<ObjectPointer> set_finalizers(const kube::ResourceType& type, const kube::Object& current,
                                             const std::vector<std::string>& finalizers,
                                             std::stop_token stop = {});
  // DELETE. The object while finalizers or foreground deletion still hold it (deletionTimestamp
  // set), null when it is gone. NotFound is returned as the error it is (callers usually accept it).
  kube::Result<ObjectPointer> remove(const kube::ResourceType& type, const ObjectKey& key,
                                     const kube::DeleteOptions& options = {}, std::stop_token stop = {});

  // Fails with an error to refuse a write of `key` (of `type`), passes to let it go. Set before use.
  using Fence = std::function<kube::Result<void>(const kube::ResourceType& type, const ObjectKey& key)>;
  void set_fence(Fence fence) { fence_ = std::move(fence); }

  kube::Client& client() { return *client_; }
  const std::string& field_manager() const { return field_manager_; }

 private:
  // The caches of `type` that hold `key`'s namespace, with the version each held when the write left.
  struct Snapshot {
    std::shared_ptr<InformerSet> informers;
    std::string resource_version;
  };
  // One write from before it is sent until its answer is stored: the write is open in every cache of
  // the snapshots (Informer::begin_write) while this lives.
  class OpenWrite {
   public:
    OpenWrite(const InformerRegistry* informers, const kube::ResourceType& type, ObjectKey key);
    ~OpenWrite();
    OpenWrite(const OpenWrite&) = delete;
    OpenWrite& operator=(const OpenWrite&) = delete;
    const std::vector<Snapshot>& snapshots() const { return snapshots_; }

   private:
    ObjectKey key_;
    std::vector<Snapshot> snapshots_;
  };
  static ObjectPointer store(const std::vector<Snapshot>& snapshots, const rapidjson::Document& answer);

  std::shared_ptr<kube::Client> client_;
  std::shared_ptr<InformerRegistry> informers_;
  std::string field_manager_;
  Fence fence_;
};

// The fence of a sharded manager: a namespaced object is written only while its namespace's shard slot
// is this replica's and its membership is fresh (ShardGate::may_write); anything else is refused with
// Cancelled. Cluster-scoped objects are not sharded.
Writer::Fence shard_fence(std::shared_ptr<const ShardGate> gate);

}  // namespace myop::runtime
