// What one cluster gives the code that works on it: the hub's (the cluster the operator runs in) or an
// engaged member's client, informer registry, cached writer and event recorder. The hub's is the
// manager's own; a member's lives as long as the member is engaged (runtime/fleet/fleet.h). A
// controller builds its reconciler of each cluster from one (runtime/controller/builder.h), so the hub is
// reconciled by the same code path as every member.
#pragma once

#include <memory>
#include <string>

#include "kube/client.h"
#include "runtime/cache/informer_registry.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/controller/writer.h"
#include "runtime/queue/object_key.h"

namespace myop::runtime {

struct ClusterContext {
  ClusterId id = kLocalCluster;
  // The member's name (its kubeconfig Secret's), "" for the hub.
  std::string name;
  std::shared_ptr<kube::Client> client;
  std::shared_ptr<InformerRegistry> informers;
  std::shared_ptr<Writer> writer;
  // Null when the manager records no Events (no reporting controller).
  std::shared_ptr<EventRecorder> recorder;
};

}  // namespace myop::runtime
