#include "myresource/metrics.h"

#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>

#include "myresource/desired.h"

namespace myop::myresource {
namespace {

prometheus::MetricFamily gauge(std::string name, std::string help, double value) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
  return family;
}

class CacheGauges final : public prometheus::Collectable {
 public:
  CacheGauges(runtime::CacheReader myresources, runtime::CacheReader deployments)
      : myresources_(std::move(myresources)), deployments_(std::move(deployments)) {
    deployments_.index_label(kTrackLabel);
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    const bool synced = myresources_.has_synced() && deployments_.has_synced();
    const double managed = synced ? static_cast<double>(myresources_.size()) : 0;
    const double canaries =
        synced ? static_cast<double>(deployments_.count_by_label(kTrackLabel, to_string(Track::Canary))) : 0;
    return {gauge("myoperator_managed_resources", "MyResource objects in the operator's cache.", managed),
            gauge("myoperator_canaries_active", "Canary Deployments that exist now.", canaries)};
  }

 private:
  runtime::CacheReader myresources_;
  runtime::CacheReader deployments_;
};

}  // namespace

void register_build_info(prometheus::Registry& registry, const std::string& version) {
  prometheus::BuildGauge()
      .Name("myoperator_build_info")
      .Help("Build information of my-operator; the value is always 1.")
      .Register(registry)
      .Add({{"version", version}})
      .Set(1);
}

std::shared_ptr<prometheus::Collectable> make_cache_gauges(runtime::CacheReader myresources,
                                                           runtime::CacheReader deployments) {
  return std::make_shared<CacheGauges>(std::move(myresources), std::move(deployments));
}

}  // namespace myop::myresource
