#pragma once
// The orphan sweep: every period, Deployments labelled managed-by my-operator whose controller
// owner (a MyResource) is gone are reported (an event and a count, once per Deployment) or
// deleted, per the orphanPolicy feature flag. The garbage collector normally removes them first;
// the sweep catches what it missed (a GC that is behind or was stopped). With a fleet it goes over
// every cluster (the hub and each engaged member), each orphan deleted in its own cluster.
//
// It writes, so it runs only on the leader: the manager starts it once leadership is held and stops
// it when leadership is lost, which cancels a delete in flight and stops the pass before the next
// one (the stop token is checked before every delete, not once per pass). The first pass runs
// `first_delay` after start (caches settle, a new leader takes over), then one every period.
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "kube/errors.h"
#include "kube/object.h"
#include "myresource/features.h"
#include "myresource/orphans.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/manager/periodic_runner.h"
#include "runtime/manager/runnable.h"
#include "runtime/queue/object_key.h"

namespace myop::myresource {

// What the sweep needs from the cluster (kube_cluster.h on the real one; unit tests use a fake).
class OrphanSweepCluster {
 public:
  virtual ~OrphanSweepCluster() = default;
  // From the caches: every Deployment managed by my-operator, one at a time (a pass never holds
  // them all parsed at once), and a MyResource by key.
  virtual void for_each_managed_deployment(
      const std::function<void(const std::shared_ptr<const kube::Object>&)>& visit) = 0;
  virtual std::shared_ptr<const kube::Object> get_myresource(const runtime::ObjectKey& key) = 0;
  virtual Features features() = 0;
  // Background deletion with a UID precondition.
  virtual kube::Result<void> delete_orphan(const Orphan& orphan, std::stop_token stop) = 0;
  virtual void record_event(const runtime::EventSubject& subject, std::string_view type,
                            std::string_view reason, std::string_view action, std::string_view message) = 0;
};

struct OrphanSweeperOptions {
  base::Duration period = std::chrono::minutes(5);
  // Never longer than one period.
  base::Duration first_delay = std::chrono::seconds(30);
  // myoperator_orphans_total{action}, myoperator_orphan_sweeps_total
  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// What one pass did.
struct SweepReport {
  std::vector<std::string> deleted;   // namespace/name
  std::vector<std::string> reported;  // namespace/name, first report only
  std::vector<std::string> failed;    // namespace/name: error
  bool stopped = false;               // leadership went (or shutdown) in the middle of the pass
};

class OrphanSweeper final : public runtime::Runnable {
 public:
  OrphanSweeper(std::shared_ptr<OrphanSweepCluster> cluster, OrphanSweeperOptions options);
  // Every cluster `clusters` returns at the start of a pass is swept, one after the other (the hub and
  // the engaged members of a fleet, runtime/fleet/fleet.h); the first one's features decide.
  using Clusters = std::function<std::vector<std::shared_ptr<OrphanSweepCluster>>()>;
  OrphanSweeper(Clusters clusters, OrphanSweeperOptions options);
  ~OrphanSweeper() override;

  std::string name() const override { return "orphan-sweep"; }
  bool needs_leader_election() const override { return true; }
  bool has_synced() const override { return true; }
  void on_synced(std::function<void()> callback) override { callback(); }
  void start() override;
  void stop() override;

  // One pass (the runner calls it every period; tests call it directly).
  SweepReport sweep(std::stop_token stop);

 private:
  // One cluster's part of a pass.
  void sweep_cluster(OrphanSweepCluster& cluster, bool remove, std::stop_token stop, SweepReport& report);

  Clusters clusters_;
  OrphanSweeperOptions options_;
  prometheus::Family<prometheus::Counter>* orphans_ = nullptr;
  prometheus::Counter* sweeps_ = nullptr;  // passes finished
  std::set<std::string> reported_;         // UIDs already reported; sweep passes run one at a time
  runtime::PeriodicRunner runner_;         // last: stops before what a pass uses goes
};

}  // namespace myop::myresource
