#pragma once
// The manager's shared caches: one informer set per (kind, namespaces, label selector, field
// selector), made the first time a controller (or anything else) asks for it and shared by everyone
// who asks for the same thing afterwards, as controller-runtime's cache and kube-rs's shared
// reflectors are. Two controllers that both need the MyResources of the same namespaces open one
// watch, not two.
//
// The registry is one Runnable for the manager: it starts every informer set, is synced when all
// are, and stops them. An informer asked for after start() is started at once.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "kube/client.h"
#include "kube/resource.h"
#include "runtime/cache/informer_set.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

// Which objects of a kind to cache.
struct InformerScope {
  // Empty: all namespaces. Ignored for cluster-scoped kinds.
  std::vector<std::string> namespaces;
  std::string label_selector;
  std::string field_selector;
  // One informer per shard slot this replica owns (InformerSet's sharded mode); needs all namespaces.
  bool sharded = false;

  friend bool operator==(const InformerScope&, const InformerScope&) = default;
};

struct InformerRegistryOptions {
  // Applied to every informer: resync period, clock, transform, watcher tuning.
  InformerOptions informer{};
  // Where myoperator_watch_stalls_total{resource} counts the watches dropped as stalled and
  // myoperator_watch_failing{resource} the informers whose list and watch are failing now (the
  // Manager sets its own). Null: not counted.
  std::shared_ptr<prometheus::Registry> registry;
};

class InformerRegistry final : public Runnable {
 public:
  InformerRegistry(std::shared_ptr<kube::Client> client, InformerRegistryOptions options = {});
  ~InformerRegistry() override;

  // The shared informer set caching `type` within `scope`; made on the first request.
  std::shared_ptr<InformerSet> informer(const kube::ResourceType& type, const InformerScope& requested);

  // Every informer set that caches objects of `type` in `namespace_name` (the cached writer feeds
  // each of them what it wrote).
  std::vector<std::shared_ptr<InformerSet>> caching(const kube::ResourceType& type,
                                                    std::string_view namespace_name) const;

  std::string name() const override { return "informers"; }
  void start() override;
  void stop() override;
  bool has_synced() const override;
  // Every informer set's (Informer::problems): the caches whose list and watch are failing now.
  std::vector<std::string> problems() const override;
  // The sharded informer sets (their slots are added and removed by the shard coordinator).
  std::vector<std::shared_ptr<InformerSet>> sharded() const;
  // Calls back when every informer set that exists now has synced (sets asked for later are started
  // at once but not waited for).
  void on_synced(std::function<void()> callback) override;
  // The informer sets not synced yet, by name (for readiness messages and logs).
  std::vector<std::string> unsynced() const;
  std::size_t size() const;

 private:
  struct Entry {
    kube::ResourceType type;
    InformerScope scope;
    std::shared_ptr<InformerSet> informers;
  };

  std::shared_ptr<kube::Client> client_;
  InformerRegistryOptions options_;
  prometheus::Family<prometheus::Counter>* stalls_ = nullptr;  // null without a registry
  prometheus::Family<prometheus::Gauge>* failing_ = nullptr;   // null without a registry
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  bool started_ = false;
};

// "myorg.io/v1alpha1/myresources" (the registry's and the logs' name of a kind).
std::string resource_id(const kube::ResourceType& type);

}  // namespace myop::runtime
