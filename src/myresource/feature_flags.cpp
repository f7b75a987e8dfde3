#include "myresource/feature_flags.h"

#include <spdlog/spdlog.h>

namespace myop::myresource {

FeatureFlags::FeatureFlags(runtime::CacheReader config_maps, runtime::ObjectKey config_map)
    : config_maps_(std::move(config_maps)), config_map_(std::move(config_map)) {}

Features FeatureFlags::current() const {
  const runtime::ObjectPointer config_map = config_maps_.get(config_map_);
  const std::string version = config_map ? std::string(config_map->resource_version()) : std::string();
  std::lock_guard lock(mutex_);
  if (version == version_) return features_;
  ParsedFeatures parsed =
      features_from_changed_config_map(config_map ? &config_map->json() : nullptr, features_);
  for (const std::string& error : parsed.errors) {
    spdlog::warn("feature-flag ConfigMap {} (resourceVersion {}): {}; that flag keeps its last good value",
                 config_map_.to_string(), version, error);
  }
  if (parsed.features != features_ || version_ == "-") {
    spdlog::info("feature flags: canary={} orphanSweep={} orphanPolicy={}", parsed.features.canary,
                 parsed.features.orphan_sweep, to_string(parsed.features.orphan_policy));
  }
  version_ = version;
  features_ = parsed.features;
  return features_;
}

}  // namespace myop::myresource
