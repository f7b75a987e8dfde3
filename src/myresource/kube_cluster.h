// Cluster (cluster.h) and OrphanSweepCluster (orphan_sweeper.h) on the real API server: reads from
// the manager's shared caches, writes through its cached writer (which puts every answer back into
// the caches, so the next reconcile does not act on a stale object and write again), events through
// its recorder.
#pragma once

#include <functional>
#include <memory>

#include "myresource/cluster.h"
#include "myresource/orphan_sweeper.h"
#include "runtime/cache/cache_reader.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/controller/writer.h"
#include "runtime/sharding/shard_gate.h"

namespace myop::myresource {

class KubeCluster final : public Cluster, public OrphanSweepCluster {
 public:
  // `writer` belongs to the manager, which outlives every controller and runnable it runs.
  KubeCluster(runtime::Writer& writer, runtime::CacheReader myresources, runtime::CacheReader deployments,
              std::function<Features()> features, std::shared_ptr<runtime::EventRecorder> recorder,
              std::shared_ptr<runtime::ShardGate> shard_gate = nullptr, std::string shard_unit = {});

  ObjectPointer get_myresource(std::string_view namespace_name, std::string_view name) override;
  ObjectPointer get_deployment(std::string_view namespace_name, std::string_view name) override;
  Features features() override;

  kube::Result<ObjectPointer> apply_deployment(const kube::Object& desired, std::stop_token stop) override;
  kube::Result<ObjectPointer> delete_deployment(std::string_view namespace_name, std::string_view name,
                                                std::string_view uid, Propagation propagation,
                                                std::stop_token stop) override;
  kube::Result<ObjectPointer> set_myresource_finalizers(const kube::Object& myresource,
                                                        const std::vector<std::string>& finalizers,
                                                        std::stop_token stop) override;
  kube::Result<ObjectPointer> apply_myresource_status(const kube::Object& body,
                                                      std::stop_token stop) override;
  void record_event(const EventSubject& subject, std::string_view type, std::string_view reason,
                    std::string_view action, std::string_view message) override;

  // OrphanSweepCluster
  void for_each_managed_deployment(const std::function<void(const ObjectPointer&)>& visit) override;
  ObjectPointer get_myresource(const runtime::ObjectKey& key) override;
  kube::Result<void> delete_orphan(const Orphan& orphan, std::stop_token stop) override;

 private:
  runtime::Writer& writer_;
  runtime::CacheReader myresources_;
  runtime::CacheReader deployments_;
  std::function<Features()> features_;
  std::shared_ptr<runtime::EventRecorder> recorder_;
  // Sharded: the orphan sweep looks only at slots this replica works on (their caches are synced, so a
  // missing owner is really missing) and deletes under the slot's ticket.
  std::shared_ptr<runtime::ShardGate> shard_gate_;
  // Set for a fleet member: all its objects are in this one unit's slot (runtime/fleet/fleet.h,
  // member_shard_unit), not in their namespaces'.
  std::string shard_unit_;
};

}  // namespace myop::myresource
