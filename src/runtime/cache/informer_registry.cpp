#include "runtime/cache/informer_registry.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "runtime/logging.h"

namespace myop::runtime {

std::string resource_id(const kube::ResourceType& type) { return type.api_version() + "/" + type.resource; }

InformerRegistry::InformerRegistry(std::shared_ptr<kube::Client> client, InformerRegistryOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (options_.registry) {
    stalls_ = &prometheus::BuildCounter()
                   .Name("myoperator_watch_stalls_total")
                   .Help(
                       "Watches dropped as stalled (no event and no bookmark for --watch-stall-timeout), "
                       "by resource")
                   .Register(*options_.registry);
    failing_ = &prometheus::BuildGauge()
                    .Name("myoperator_watch_failing")
                    .Help(
                        "Informers whose list and watch keep failing now (two attempts in a row without "
                        "progress; /readyz names them and the API server's error), by resource")
                    .Register(*options_.registry);
  }
}

InformerRegistry::~InformerRegistry() { stop(); }

std::shared_ptr<InformerSet> InformerRegistry::informer(const kube::ResourceType& type,
                                                        const InformerScope& requested) {
  InformerScope scope = requested;
  if (!type.namespaced) scope.namespaces.clear();
  if (scope.sharded && (!type.namespaced || !scope.namespaces.empty())) {
    throw std::invalid_argument(
        "a sharded cache of " + type.resource +
        " needs a namespaced kind watched in all namespaces (shards are namespaces' hashes)");
  }
  std::sort(scope.namespaces.begin(), scope.namespaces.end());
  scope.namespaces.erase(std::unique(scope.namespaces.begin(), scope.namespaces.end()),
                         scope.namespaces.end());

  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (resource_id(entry.type) == resource_id(type) && entry.scope == scope) return entry.informers;
  }
  InformerOptions options = options_.informer;
  options.name = type.resource;
  if (!scope.label_selector.empty()) options.name += "[" + scope.label_selector + "]";
  if (!scope.field_selector.empty()) options.name += "[" + scope.field_selector + "]";
  options.watcher.label_selector = scope.label_selector;
  options.watcher.field_selector = scope.field_selector;
  if (stalls_ != nullptr) {
    // Made now, so the series reads 0 until the first stall. The callback holds the registry: an
    // informer set may outlive this registry.
    prometheus::Counter* stalls = &stalls_->Add({{"resource", type.qualified_resource()}});
    options.watcher.on_stall = [registry = options_.registry, stalls, also = options.watcher.on_stall] {
      stalls->Increment();
      if (also) also();
    };
  }
  if (failing_ != nullptr) {
    prometheus::Gauge* failing = &failing_->Add({{"resource", type.qualified_resource()}});
    options.on_failing = [registry = options_.registry, failing,
                          also = options.on_failing](bool now_failing) {
      if (now_failing) {
        failing->Increment();
      } else {
        failing->Decrement();
      }
      if (also) also(now_failing);
    };
  }
  auto informers = scope.sharded
                       ? std::make_shared<InformerSet>(client_, type, InformerSet::Sharded{}, options)
                       : std::make_shared<InformerSet>(client_, type, scope.namespaces, options);
  entries_.push_back({type, scope, informers});
  if (started_) {
    log(spdlog::level::info, "Starting cache", {{"cache", informers->name()}});
    informers->start();
  }
  return informers;
}

std::vector<std::shared_ptr<InformerSet>> InformerRegistry::caching(const kube::ResourceType& type,
                                                                    std::string_view namespace_name) const {
  std::vector<std::shared_ptr<InformerSet>> found;
  const std::string id = resource_id(type);
  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (resource_id(entry.type) == id && entry.informers->in_scope(namespace_name)) {
      found.push_back(entry.informers);
    }
  }
  return found;
}

std::vector<std::shared_ptr<InformerSet>> InformerRegistry::sharded() const {
  std::vector<std::shared_ptr<InformerSet>> found;
  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (entry.informers->sharded()) found.push_back(entry.informers);
  }
  return found;
}

void InformerRegistry::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  for (const Entry& entry : entries_) {
    log(spdlog::level::info, "Starting cache", {{"cache", entry.informers->name()}});
    entry.informers->start();
  }
}

void InformerRegistry::stop() {
  std::vector<std::shared_ptr<InformerSet>> running;
  {
    std::lock_guard lock(mutex_);
    if (!started_) return;
    started_ = false;
    for (const Entry& entry : entries_) running.push_back(entry.informers);
  }
  for (const auto& informers : running) informers->stop();
}

bool InformerRegistry::has_synced() const {
  std::lock_guard lock(mutex_);
  return std::all_of(entries_.begin(), entries_.end(),
                     [](const Entry& entry) { return entry.informers->has_synced(); });
}

std::vector<std::string> InformerRegistry::problems() const {
  std::vector<std::shared_ptr<InformerSet>> sets;
  {
    std::lock_guard lock(mutex_);
    for (const Entry& entry : entries_) sets.push_back(entry.informers);
  }
  std::vector<std::string> found;
  for (const auto& set : sets) {
    for (auto& problem : set->problems()) found.push_back(std::move(problem));
  }
  return found;
}

void InformerRegistry::on_synced(std::function<void()> callback) {
  std::vector<std::shared_ptr<InformerSet>> sets;
  {
    std::lock_guard lock(mutex_);
    for (const Entry& entry : entries_) sets.push_back(entry.informers);
  }
  if (sets.empty()) return callback();
  // Each set calls back once; the last of them completes the registry.
  auto remaining = std::make_shared<std::atomic<std::size_t>>(sets.size());
  auto synced = std::make_shared<std::function<void()>>(std::move(callback));
  for (const auto& set : sets) {
    set->on_synced([remaining, synced] {
      if (--*remaining == 0) (*synced)();
    });
  }
}

std::vector<std::string> InformerRegistry::unsynced() const {
  std::vector<std::string> names;
  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (!entry.informers->has_synced()) names.push_back(entry.informers->name());
  }
  return names;
}

std::size_t InformerRegistry::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace myop::runtime
