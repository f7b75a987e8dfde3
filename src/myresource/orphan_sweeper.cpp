#include "myresource/orphan_sweeper.h"

#include <algorithm>

#include "runtime/logging.h"

namespace myop::myresource {

OrphanSweeper::OrphanSweeper(std::shared_ptr<OrphanSweepCluster> cluster, OrphanSweeperOptions options)
    : OrphanSweeper([cluster = std::move(
                         cluster)] { return std::vector<std::shared_ptr<OrphanSweepCluster>>{cluster}; },
                    std::move(options)) {}

OrphanSweeper::OrphanSweeper(Clusters clusters, OrphanSweeperOptions options)
    : clusters_(std::move(clusters)),
      options_(std::move(options)),
      // A pass that threw: the next one as usual.
      runner_({.name = "orphan-sweep",
               .first_delay = std::min(options_.first_delay, options_.period),
               .period = options_.period,
               .retry = base::constant_backoff(options_.period),
               .needs_leader_election = true,
               .clock = options_.clock},
              [this](const std::stop_token& stop) {
                sweep(stop);
                return runtime::StepResult::ok();
              }) {
  if (!options_.registry) options_.registry = std::make_shared<prometheus::Registry>();
  orphans_ = &prometheus::BuildCounter()
                  .Name("myoperator_orphans_total")
                  .Help("Deployments found managed by my-operator whose owner is gone, by action taken.")
                  .Register(*options_.registry);
  // Both series from the start, at 0: a dashboard's increase() over them shows 0 orphans, not "no data".
  orphans_->Add({{"action", "reported"}});
  orphans_->Add({{"action", "deleted"}});
  sweeps_ = &prometheus::BuildCounter()
                 .Name("myoperator_orphan_sweeps_total")
                 .Help("Orphan sweep passes finished (with orphanSweep off, a pass only reads the flag).")
                 .Register(*options_.registry)
                 .Add({});
}

OrphanSweeper::~OrphanSweeper() { stop(); }

void OrphanSweeper::start() { runner_.start(); }

void OrphanSweeper::stop() { runner_.stop(); }

SweepReport OrphanSweeper::sweep(std::stop_token stop) {
  SweepReport report;
  const std::vector<std::shared_ptr<OrphanSweepCluster>> clusters = clusters_();
  const Features features = clusters.empty() ? Features{} : clusters.front()->features();
  if (clusters.empty() || !features.orphan_sweep) {
    sweeps_->Increment();
    return report;
  }
  const bool remove = features.orphan_policy == OrphanPolicy::Delete;
  for (const auto& cluster : clusters) {
    if (report.stopped) break;
    sweep_cluster(*cluster, remove, stop, report);
  }
  if (!report.stopped) sweeps_->Increment();
  return report;
}

void OrphanSweeper::sweep_cluster(OrphanSweepCluster& cluster, bool remove, std::stop_token stop,
                                  SweepReport& report) {
  const MyResourceLookup lookup = [&cluster](const runtime::ObjectKey& key) {
    return cluster.get_myresource(key);
  };
  std::vector<Orphan> orphans;
  cluster.for_each_managed_deployment([&](const std::shared_ptr<const kube::Object>& deployment) {
    if (auto orphan = orphan_of(*deployment, lookup)) orphans.push_back(std::move(*orphan));
  });
  for (const Orphan& orphan : orphans) {
    if (stop.stop_requested()) {
      report.stopped = true;
      break;
    }
    const std::string where = orphan.namespace_name + "/" + orphan.name;
    if (!remove && reported_.contains(orphan.uid)) continue;  // reported once
    runtime::log(spdlog::level::warn, remove ? "deleting orphaned Deployment" : "found orphaned Deployment",
                 {{"namespace", orphan.namespace_name}, {"name", orphan.name}, {"reason", orphan.reason}});
    const runtime::EventSubject subject{"apps/v1",   "Deployment", orphan.namespace_name,
                                        orphan.name, orphan.uid,   ""};
    if (!remove) {
      reported_.insert(orphan.uid);
      cluster.record_event(subject, "Warning", "OrphanFound", "Report", orphan.reason);
      orphans_->Add({{"action", "reported"}}).Increment();
      report.reported.push_back(where);
      continue;
    }
    auto deleted = cluster.delete_orphan(orphan, stop);
    if (!deleted && !kube::is_not_found(deleted.error())) {
      runtime::log(spdlog::level::warn, "orphan sweep: deleting a Deployment failed",
                   {{"namespace", orphan.namespace_name},
                    {"name", orphan.name},
                    {"error", deleted.error().to_string()}});
      report.failed.push_back(where + ": " + deleted.error().to_string());
      continue;
    }
    cluster.record_event(subject, "Warning", "OrphanDeleted", "Delete", orphan.reason);
    orphans_->Add({{"action", "deleted"}}).Increment();
    report.deleted.push_back(where);
  }
}

}  // namespace myop::myresource
