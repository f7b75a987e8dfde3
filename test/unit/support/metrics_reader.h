#pragma once
// Reads one sample out of a prometheus registry, for tests.
#include <prometheus/registry.h>

#include <map>
#include <optional>
#include <string>

namespace myop::runtime::testing {

// Counter/gauge value, or a histogram's sample count, of the metric `name` whose labels include
// all of `labels` and none of `absent` (the first such series, in the registry's order).
inline std::optional<double> metric_value(prometheus::Registry& registry, const std::string& name,
                                          const std::map<std::string, std::string>& labels = {},
                                          const std::string& absent = {}) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      bool match = true;
      for (const auto& [key, value] : labels) {
        bool found = false;
        for (const auto& pair : metric.label) found |= pair.name == key && pair.value == value;
        match &= found;
      }
      for (const auto& pair : metric.label) match &= absent.empty() || pair.name != absent;
      if (!match) continue;
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        case prometheus::MetricType::Histogram:
          return static_cast<double>(metric.histogram.sample_count);
        default:
          return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

}  // namespace myop::runtime::testing
