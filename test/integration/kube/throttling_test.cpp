// A real 429 from API Priority and Fairness: a FlowSchema sends one test user to a priority level with
// the smallest possible concurrency that rejects instead of queueing. The client must retry the 429s
// (honouring Retry-After) until every request succeeds.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "kube_test_support.h"

using namespace myop::kube;
using namespace myop::kube::testing;
using namespace std::chrono_literals;

namespace {

const char* kThrottledUser = "myop-throttled-user";

// Removes the cluster-scoped APF objects even when the test fails.
struct PriorityLevelGuard {
  ~PriorityLevelGuard() {
    myop::testenv::kubectl("delete flowschema myop-throttled --ignore-not-found");
    myop::testenv::kubectl("delete prioritylevelconfiguration myop-tiny --ignore-not-found");
  }
};

}  // namespace

TEST_CASE("429 from API Priority and Fairness is retried until the request succeeds",
          "[integration][kube][throttling]") {
  myop::testenv::ScopedNamespace ns("kube-apf");
  PriorityLevelGuard guard;
  auto applied = myop::testenv::kubectl_apply(std::string(R"(
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: myop-tiny
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Reject
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: myop-throttled
spec:
  priorityLevelConfiguration:
    name: myop-tiny
  matchingPrecedence: 100
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: User
      user:
        name: )") + kThrottledUser + R"(
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
      clusterScope: true
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
)");
  INFO(applied.output);
  REQUIRE(applied.ok());
  myop::testenv::kubectl_or_fail(
      "create role configmap-reader --verb=get,list,watch --resource=configmaps -n " + ns.name());
  myop::testenv::kubectl_or_fail("create rolebinding throttled-reader --role=configmap-reader --user=" +
                                 std::string(kThrottledUser) + " -n " + ns.name());
  // Enough objects that each list takes the server a moment and several seats.
  Client admin = admin_client();
  for (int i = 0; i < 150; ++i) {
    auto load =
        parse_json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"load-)" + std::to_string(i) +
                   R"("},"data":{"payload":")" + std::string(200, 'x') + R"("}})");
    REQUIRE(admin.create(resources::config_maps(), ns.name(), load).ok());
  }

  const std::string kubeconfig = myop::testenv::kubeconfig_for_user(kThrottledUser);
  ConfigSearch search;
  search.kubeconfig_path = kubeconfig;
  auto config = load_client_config(search);
  REQUIRE(config.ok());

  auto metrics = std::make_shared<RecordingMetrics>();
  TransportOptions options;
  options.qps = 0;  // no client-side limit: let the server do the throttling
  options.metrics = metrics;
  options.default_timeout = 120s;
  Client client = client_for(config.value(), options);

  // Wait until the API server has picked up the new FlowSchema (its status says Dangling=False).
  REQUIRE(
      myop::testenv::kubectl("wait --for=condition=Dangling=False flowschema/myop-throttled --timeout=30s")
          .ok());

  constexpr int kThreads = 24;
  constexpr int kRequestsPerThread = 4;
  std::atomic<int> succeeded{0};
  std::atomic<int> failed{0};
  std::string first_failure;
  std::mutex failure_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRequestsPerThread; ++r) {
        auto listed = client.list(resources::config_maps(), ns.name());
        if (listed.ok()) {
          ++succeeded;
        } else {
          ++failed;
          std::lock_guard lock(failure_mutex);
          if (first_failure.empty()) first_failure = listed.error().to_string();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  INFO("requests by code: " << metrics->summary() << " first failure: " << first_failure);
  CHECK(metrics->count("429") >= 1);  // the server really throttled us
  CHECK(failed == 0);                 // and every request got through in the end
  CHECK(succeeded == kThreads * kRequestsPerThread);
}
