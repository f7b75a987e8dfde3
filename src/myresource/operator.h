#pragma once
// The MyResource operator assembled from the runtime: its informers (MyResources and the
// Deployments it manages, in the namespaces of its scope; the feature-flag ConfigMap in its own
// namespace), the reconciler on a KubeCluster, the controller and its watches, the orphan sweep,
// and its own metrics. main.cpp builds one and hands it to the manager.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "myresource/features.h"
#include "runtime/controller.h"
#include "runtime/event_recorder.h"
#include "runtime/informer.h"
#include "runtime/informer_set.h"
#include "runtime/manager.h"
#include "runtime/runnable.h"

namespace myop::myresource {

class KubeCluster;

struct OperatorOptions {
  std::vector<std::string> namespaces;  // empty: all namespaces
  std::string operator_namespace = "default";
  std::string config_map = "my-operator-config";
  int max_concurrent_reconciles = 4;
  std::chrono::seconds resync_period = std::chrono::hours(10);
  std::chrono::seconds orphan_sweep_period = std::chrono::minutes(5);
  std::string reporting_instance;  // pod or host name, for events
  std::string version;
  std::shared_ptr<prometheus::Registry> registry;
};

class Operator {
 public:
  Operator(std::shared_ptr<kube::Client> client, OperatorOptions options);
  ~Operator();
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  // Adds the informers, the controller, the sweep and the ready checks to the manager.
  void register_with(runtime::Manager& manager);

  // The operator-wide feature flags as the ConfigMap says now (defaults without it).
  Features features() const;

  // Whether this replica may write now (it leads, or there is no election); the orphan sweep,
  // which runs outside the controller, asks before each pass. Default: always.
  void set_may_write(std::function<bool()> may_write);

  // One pass of the orphan sweep (the sweep thread calls it; tests may too).
  void sweep_orphans();

 private:
  class Background;

  std::shared_ptr<kube::Client> client_;
  OperatorOptions options_;
  std::shared_ptr<runtime::InformerSet> myresources_;
  std::shared_ptr<runtime::InformerSet> deployments_;
  std::shared_ptr<runtime::Informer> config_maps_;
  std::shared_ptr<runtime::EventRecorder> recorder_;
  std::shared_ptr<KubeCluster> cluster_;
  std::shared_ptr<runtime::Controller> controller_;
  std::shared_ptr<Background> background_;

  std::set<std::string> reported_orphans_;  // UIDs already reported (policy report), sweep thread only

  // The flags of the ConfigMap version last read (its resourceVersion; "-" before the first read,
  // "" when there is no ConfigMap): parsed, and bad values logged, once per version.
  mutable std::mutex features_mutex_;
  mutable std::string features_version_ = "-";
  mutable Features features_;
  prometheus::Family<prometheus::Counter>* orphans_family_ = nullptr;
  prometheus::Gauge* managed_resources_ = nullptr;
  prometheus::Gauge* canaries_active_ = nullptr;
};

}  // namespace myop::myresource
