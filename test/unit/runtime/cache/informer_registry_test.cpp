// The informer registry's stall counter, against a transport whose watches end on cue (the real server
// is in test/integration/runtime/cache/informer_test.cpp; a real stall in
// test/integration/myresource/faults_test.cpp).
#include "runtime/cache/informer_registry.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/eventually.h"
#include "support/metrics_reader.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::runtime::testing::metric_value;
using myop::testing::eventually;

namespace {

// Every watch sends one bookmark and then ends: Deployments' watches with the transport's idle
// timeout (a stall), ConfigMaps' as the server closing them (an ordinary end).
class EndingWatchesTransport final : public kube::Transport {
 public:
  kube::Result<kube::Response> send(const kube::Request&, std::stop_token) override {
    return kube::make_error(kube::Reason::Transport, "no requests here");
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request& request, const kube::ChunkHandler& on_chunk,
                                       std::stop_token, const kube::StreamOptions&) override {
    const bool deployments = request.path.find("/deployments") != std::string::npos;
    {
      std::lock_guard lock(mutex_);
      ++watches_[deployments ? "deployments" : "configmaps"];
    }
    on_chunk(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
             "\n");
    if (deployments) return kube::make_error(kube::Reason::Timeout, "no data on " + request.path);
    return kube::StreamEnd::ServerClosed;
  }
  const std::string& host() const override { return host_; }

  int watches(const std::string& resource) {
    std::lock_guard lock(mutex_);
    return watches_[resource];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> watches_;
  std::string host_ = "test:443";
};

// A registry on `transport` counting into `metrics`, whose watches retry after 1 to 4 ms, caching
// each of `types` in namespace team-a.
std::unique_ptr<InformerRegistry> fast_registry(std::shared_ptr<kube::Transport> transport,
                                                std::shared_ptr<prometheus::Registry> metrics,
                                                const std::vector<kube::ResourceType>& types) {
  InformerRegistryOptions options;
  options.registry = std::move(metrics);
  options.informer.watcher.backoff.initial = 1ms;
  options.informer.watcher.backoff.maximum = 4ms;
  auto registry = std::make_unique<InformerRegistry>(
      std::make_shared<kube::Client>(std::move(transport), "informer-registry-test"), options);
  InformerScope scope;
  scope.namespaces = {"team-a"};
  for (const auto& type : types) registry->informer(type, scope);
  return registry;
}

}  // namespace

TEST_CASE("informer registry: myoperator_watch_stalls_total counts stalled watches by resource",
          "[runtime][informer][metrics]") {
  auto transport = std::make_shared<EndingWatchesTransport>();
  auto metrics = std::make_shared<prometheus::Registry>();
  auto registry_owner =
      fast_registry(transport, metrics, {kube::resources::deployments(), kube::resources::config_maps()});
  InformerRegistry& registry = *registry_owner;
  // The series exist from the start, at 0.
  CHECK(metric_value(*metrics, "myoperator_watch_stalls_total", {{"resource", "deployments.apps"}}) == 0);
  CHECK(metric_value(*metrics, "myoperator_watch_stalls_total", {{"resource", "configmaps"}}) == 0);

  registry.start();
  REQUIRE(eventually(
      [&] { return transport->watches("deployments") >= 3 && transport->watches("configmaps") >= 3; }));
  registry.stop();
  const auto stalls =
      metric_value(*metrics, "myoperator_watch_stalls_total", {{"resource", "deployments.apps"}});
  REQUIRE(stalls.has_value());
  CHECK(*stalls >= 2);
  CHECK(*stalls <= transport->watches("deployments"));
  CHECK(metric_value(*metrics, "myoperator_watch_stalls_total", {{"resource", "configmaps"}}) == 0);
}

namespace {

// Every list and watch fails as the API server answers while a CRD's conversion webhook is down,
// until repair(); then each watch streams an empty initial state and ends.
class ConversionDownTransport final : public kube::Transport {
 public:
  kube::Result<kube::Response> send(const kube::Request&, std::stop_token) override { return failure(); }
  kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler& on_chunk,
                                       std::stop_token, const kube::StreamOptions&) override {
    if (broken_) return failure();
    on_chunk(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":)"
             R"({"k8s.io/initial-events-end":"true"}}}})"
             "\n");
    return kube::StreamEnd::ServerClosed;
  }
  const std::string& host() const override { return host_; }
  void repair() { broken_ = false; }

 private:
  static kube::Error failure() {
    return kube::error_from_response(
        500,
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500,)"
        R"("message":"conversion webhook for myorg.io/v1beta1, Kind=MyResource failed: connection refused"})");
  }
  std::atomic<bool> broken_{true};
  std::string host_ = "test:443";
};

}  // namespace

TEST_CASE(
    "informer registry: a list and watch that keep failing show in problems() and myoperator_watch_failing",
    "[runtime][informer][metrics]") {
  auto transport = std::make_shared<ConversionDownTransport>();
  auto metrics = std::make_shared<prometheus::Registry>();
  auto registry_owner = fast_registry(transport, metrics, {kube::resources::config_maps()});
  InformerRegistry& registry = *registry_owner;
  CHECK(metric_value(*metrics, "myoperator_watch_failing", {{"resource", "configmaps"}}) == 0);

  registry.start();
  REQUIRE(eventually([&] { return !registry.problems().empty(); }));
  const auto problems = registry.problems();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::StartsWith("configmaps/team-a (configmaps in namespace team-a): "));
  CHECK_THAT(problems[0], Catch::Contains("conversion webhook for myorg.io/v1beta1, Kind=MyResource failed"));
  // The gauge moves just after the informer's health changes (outside its lock), so it is waited for.
  CHECK(eventually([&] {
    return metric_value(*metrics, "myoperator_watch_failing", {{"resource", "configmaps"}}) == 1;
  }));

  transport->repair();
  REQUIRE(eventually([&] { return registry.has_synced(); }));
  CHECK(registry.problems().empty());
  CHECK(eventually([&] {
    return metric_value(*metrics, "myoperator_watch_failing", {{"resource", "configmaps"}}) == 0;
  }));
  registry.stop();
}
