#pragma once
// The operator's own metrics besides the runtime's: myoperator_build_info{version} (always 1), and
// two gauges read from the shared caches when Prometheus scrapes (no thread keeps them current):
// myoperator_managed_resources (MyResources cached) and myoperator_canaries_active (canary
// Deployments that exist). Both read 0 until the caches have synced.
// myoperator_orphans_total belongs to the orphan sweeper (orphan_sweeper.h).
#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "runtime/cache/cache_reader.h"

namespace myop::myresource {

void register_build_info(prometheus::Registry& registry, const std::string& version);

std::shared_ptr<prometheus::Collectable> make_cache_gauges(runtime::CacheReader myresources,
                                                           runtime::CacheReader deployments);

}  // namespace myop::myresource
