#pragma once
// The operator-wide feature flags as the watched ConfigMap says now (`--config-map` in the
// operator's namespace; built-in defaults without it). The ConfigMap is read from the shared cache
// and parsed once per resourceVersion; a bad value keeps its last good value and is logged once
// for that version, not at every reconcile (features.h has the parsing rules).
#include <memory>
#include <mutex>
#include <string>

#include "myresource/features.h"
#include "runtime/cache/cache_reader.h"
#include "runtime/queue/object_key.h"

namespace myop::myresource {

class FeatureFlags {
 public:
  FeatureFlags(runtime::CacheReader config_maps, runtime::ObjectKey config_map);

  Features current() const;
  const runtime::ObjectKey& config_map() const { return config_map_; }

 private:
  runtime::CacheReader config_maps_;
  runtime::ObjectKey config_map_;
  mutable std::mutex mutex_;
  // The ConfigMap version last parsed ("-" before the first read, "" when there is none).
  mutable std::string version_ = "-";
  mutable Features features_;
};

}  // namespace myop::myresource
