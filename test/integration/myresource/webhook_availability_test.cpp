// Conversions go only to webhook pods that can answer (issue 33): two `my-operator --webhook-only`
// processes behind one Service, while clients change MyResources through v1alpha1 without a pause;
// one process is SIGKILLed (and comes back, as the kubelet restarts a container), then the other
// SIGSTOPped (and continued, as a node that stalls and recovers).
//
// The API server resolves a webhook's Service to a ready address of its EndpointSlices
// (--enable-aggregator-routing on the test control plane) for every call. Nothing here runs a kubelet
// or the EndpointSlice controller (kwok's pods have no processes), so the test stands in for both with
// the probe the chart gives the webhook pods (docs/install.md): every kProbePeriod it GETs each
// process's /readyz with a kProbeTimeout timeout and writes the result (not ready after
// kProbeFailureThreshold failures in a row, ready after one success) into its endpoint's ready
// condition. An endpoint's address may not be a loopback one (127.0.0.0/8 is refused by validation),
// so the test gives the loopback interface an address of the benchmarking range 198.18.0.0/15 (never
// routed) for its duration, which needs CAP_NET_ADMIN (root, as `make test` runs here); the processes
// listen on it, each on a port of its own, so each has a slice of its own.
//
// Each change is a merge patch through v1alpha1 with a value no earlier one had: the API server
// converts it to v1beta1 to store it and back to answer (a read of an unchanged object may be
// answered without calling the webhook, so reads alone would prove nothing). The API server calls a
// conversion webhook once, without a retry, with a 30 s timeout. So:
// - SIGKILL: a change the API server sends to the dead process before its endpoint is marked not ready
//   fails at once (connection refused). The window is bounded by the probe: kProbeFailureThreshold
//   periods + kProbeTimeout + the endpoint write; after it, no change fails.
// - SIGSTOP: a change sent to the paused process waits (the kernel still accepts the connection)
//   until the process continues. Once the probe has marked it not ready, changes go to the other
//   process only and never wait for the paused one.
// Outside those windows every change succeeds: the start, the killed process's return and the paused
// one's (a process is marked ready only once /readyz says its webhook serves a valid certificate).
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kProbePeriod = 2s;          // the chart's readinessProbe periodSeconds of the webhook pods
constexpr auto kProbeTimeout = 1s;         // its timeoutSeconds
constexpr int kProbeFailureThreshold = 2;  // its failureThreshold (successThreshold 1)
constexpr auto kServiceName = "my-operator-webhook";

struct Request {
  Clock::time_point started;
  Clock::time_point finished;
  bool ok = false;
  std::string error;
};

// An address of 198.18.0.0/15 on the loopback interface while it lives (one per test process).
class LoopbackAddress {
 public:
  LoopbackAddress() {
    const auto pid = static_cast<unsigned>(::getpid());
    address_ = "198.18." + std::to_string((pid >> 8U) % 256U) + "." + std::to_string(pid % 254U + 1U);
    const auto added = testenv::run("ip addr add " + address_ + "/32 dev lo 2>&1");
    if (!added.ok())
      FAIL("cannot add " << address_ << " to the loopback interface (the test needs CAP_NET_ADMIN: endpoint "
                         << "addresses may not be loopback ones): " << added.output);
  }
  ~LoopbackAddress() { testenv::run("ip addr del " + address_ + "/32 dev lo"); }
  LoopbackAddress(const LoopbackAddress&) = delete;
  LoopbackAddress& operator=(const LoopbackAddress&) = delete;
  const std::string& address() const { return address_; }

 private:
  std::string address_;
};

// The EndpointSlice of one webhook process: `address` at its port, ready or not.
std::string endpoint_slice(const std::string& name, const std::string& ns, const std::string& address,
                           unsigned short port, bool ready) {
  return "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: " + name +
         "\n  namespace: " + ns + "\n  labels:\n    kubernetes.io/service-name: " + kServiceName +
         "\n    endpointslice.kubernetes.io/managed-by: webhook-availability-test\naddressType: IPv4\n"
         "endpoints:\n  - addresses: [\"" +
         address + "\"]\n    conditions:\n      ready: " + (ready ? "true" : "false") +
         "\nports:\n  - name: webhook\n    protocol: TCP\n    port: " + std::to_string(port) + "\n";
}

// One webhook process, its slice, and what the stand-in prober last wrote for it.
struct Backend {
  std::string slice;
  unsigned short port = 0;
  std::unique_ptr<OperatorProcess> process;
  // The port the prober asks (set by the test's thread after each start).
  std::atomic<unsigned short> probe_port{0};
  bool ready = false;  // as written in the slice
  int failures = 0;    // consecutive failed probes (the prober's thread only)
  Clock::time_point marked_not_ready{};
  Clock::time_point marked_ready{};
};

bool probe_ready(unsigned short probe_port) {
  const auto seconds = std::chrono::duration<double>(kProbeTimeout).count();
  const auto result = testenv::run("curl -s -o /dev/null -w '%{http_code}' -m " + std::to_string(seconds) +
                                   " http://127.0.0.1:" + std::to_string(probe_port) + "/readyz");
  return result.output == "200";
}

std::string seconds_text(Clock::duration duration) {
  return std::to_string(std::chrono::duration<double>(duration).count()).substr(0, 5) + " s";
}

}  // namespace

TEST_CASE(
    "webhook availability: with two webhook processes, one SIGKILLed and another SIGSTOPped, v1alpha1 "
    "changes fail only until the probe marks it not ready, and never wait on it after",
    "[myresource][operator][conversion]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  testenv::ScopedNamespace ns("webhook-ha");
  const LoopbackAddress address;

  // The CRD's conversion goes to the Service while the test runs; at the end, after the processes
  // have stopped (so none puts its CA back), it goes back to the fixture's webhook.
  struct Restore {
    std::string client_config;
    ~Restore() {
      testenv::kubectl(
          R"(patch crd myresources.myorg.io --type=json -p '[{"op":"replace","path":"/spec/conversion/webhook/clientConfig","value":)" +
          client_config + "}]'");
    }
  } restore{R"({"url":")" + testenv::webhook_url() + R"(","caBundle":")" + testenv::webhook_ca_bundle() +
            R"("})"};

  // Two webhook-only operators sharing the self-managed certificate of the Service's DNS name (the
  // first to start makes it); each keeps the CRD's caBundle.
  std::vector<Backend> backends(2);
  for (std::size_t index = 0; index < backends.size(); ++index) {
    auto& backend = backends[index];
    backend.slice = std::string(kServiceName) + "-" + std::to_string(index);
    backend.port = free_port();
    OperatorOptions options;
    options.user = "myop-webhook-ha-" + std::to_string(index) + "-" + ns.name();
    options.pod_namespace = ns.name();
    options.extra_cluster_role_files = {"webhook_role.yaml"};
    options.extra_role_files = {"webhook_secret_role.yaml"};
    options.extra_args = {"--webhook-only", "--webhook-bind-address",
                          address.address() + ":" + std::to_string(backend.port), "--webhook-service",
                          kServiceName};
    backend.process = std::make_unique<OperatorProcess>(options);
  }
  // No selector: no controller writes its slices, the test does.
  const auto service = testenv::kubectl_apply("apiVersion: v1\nkind: Service\nmetadata:\n  name: " +
                                              std::string(kServiceName) + "\n  namespace: " + ns.name() +
                                              "\nspec:\n  ports:\n    - name: webhook\n      port: 443\n"
                                              "      targetPort: 9443\n      protocol: TCP\n");
  INFO(service.output);
  REQUIRE(service.ok());
  // The CRD names the Service before the processes start: each keeps the caBundle of a clientConfig
  // that names its own Service only.
  testenv::kubectl_or_fail(
      R"(patch crd myresources.myorg.io --type=json -p '[{"op":"replace","path":"/spec/conversion/webhook/clientConfig","value":{"service":{"namespace":")" +
      ns.name() + R"(","name":")" + kServiceName + R"(","path":"/convert","port":443}}}]')");
  for (auto& backend : backends) {
    backend.process->start();
    backend.probe_port = backend.process->probe_port();
    const auto applied = testenv::kubectl_apply(
        endpoint_slice(backend.slice, ns.name(), address.address(), backend.port, true));
    INFO(applied.output);
    REQUIRE(applied.ok());
    backend.ready = true;
  }

  // A few objects, stored as v1beta1: every v1alpha1 list converts them through the webhook.
  for (int index = 0; index < 3; ++index) {
    const auto created = testenv::kubectl_apply(
        "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: app-" + std::to_string(index) +
        "\n  namespace: " + ns.name() + "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n");
    REQUIRE(created.ok());
  }
  const std::string read_command =
      "get myresources.v1alpha1.myorg.io -n " + ns.name() + " -o name --request-timeout=45s";
  // The operators put their CA into the caBundle: conversions through the Service work.
  REQUIRE(eventually([&] { return testenv::kubectl(read_command).ok(); }, 30s));

  // The stand-in for the kubelet's readiness probe and the EndpointSlice controller.
  std::atomic<bool> done{false};
  std::mutex mutex;  // guards the backends' ready state and times, and the requests
  std::thread prober([&] {
    while (!done) {
      const auto tick = Clock::now();
      for (auto& backend : backends) {
        const bool answered = probe_ready(backend.probe_port);
        backend.failures = answered ? 0 : backend.failures + 1;
        bool ready = false;
        bool changed = false;
        {
          std::lock_guard lock(mutex);
          ready = answered || (backend.ready && backend.failures < kProbeFailureThreshold);
          changed = ready != backend.ready;
        }
        if (!changed) continue;
        const auto written = testenv::kubectl_apply(
            endpoint_slice(backend.slice, ns.name(), address.address(), backend.port, ready));
        std::lock_guard lock(mutex);
        if (!written.ok()) continue;  // tried again at the next tick
        backend.ready = ready;
        (ready ? backend.marked_ready : backend.marked_not_ready) = Clock::now();
      }
      std::this_thread::sleep_until(tick + kProbePeriod);
    }
  });
  std::vector<Request> requests;
  std::vector<std::thread> clients;
  for (int client = 0; client < 3; ++client) {
    clients.emplace_back([&, client] {
      // A change made through v1alpha1, with a value no earlier request had: the API server converts
      // the patched object to v1beta1 to store it and back to answer, each time anew (an unchanged
      // object's v1alpha1 form may be answered without a call to the webhook).
      for (int sequence = 0; !done; ++sequence) {
        Request request;
        request.started = Clock::now();
        const auto result = testenv::kubectl(
            "patch myresources.v1alpha1.myorg.io app-" + std::to_string(client) + " -n " + ns.name() +
            R"( --type=merge --request-timeout=45s -p '{"metadata":{"annotations":{"test/sequence":")" +
            std::to_string(sequence) + R"("}}}')");
        request.finished = Clock::now();
        request.ok = result.ok();
        if (!request.ok) request.error = result.output;
        std::lock_guard lock(mutex);
        requests.push_back(std::move(request));
      }
    });
  }
  const auto marked = [&](const Backend& backend, bool ready) {
    std::lock_guard lock(mutex);
    return backend.ready == ready;
  };
  // The probe's bound (failureThreshold periods, the last one's timeout), with room for the write.
  const auto window = kProbeFailureThreshold * kProbePeriod + kProbeTimeout + 5s;

  std::this_thread::sleep_for(3s);  // both serve
  auto& killed = backends[0];
  const auto kill_at = Clock::now();
  killed.process->kill();
  const bool killed_marked = eventually([&] { return marked(killed, false); }, window);
  killed.process->start();  // as the kubelet restarts the container; ready once /readyz says so
  killed.probe_port = killed.process->probe_port();
  const bool killed_back = eventually([&] { return marked(killed, true); }, window);
  std::this_thread::sleep_for(3s);

  auto& paused = backends[1];
  const auto stop_at = Clock::now();
  paused.process->signal(SIGSTOP);
  const bool paused_marked = eventually([&] { return marked(paused, false); }, window);
  std::this_thread::sleep_for(8s);  // changes go on, to the other process only
  const auto continue_at = Clock::now();
  paused.process->signal(SIGCONT);
  const bool paused_back = eventually([&] { return marked(paused, true); }, window);
  std::this_thread::sleep_for(3s);
  done = true;
  for (auto& client : clients) client.join();
  prober.join();

  REQUIRE(killed_marked);
  REQUIRE(killed_back);
  REQUIRE(paused_marked);
  REQUIRE(paused_back);
  const auto killed_unready_at = killed.marked_not_ready;
  const auto paused_unready_at = paused.marked_not_ready;
  // A change the API server may still have sent to the killed process: started before its endpoint was
  // marked not ready (plus a second for the API server's informer to see the slice).
  const auto kill_window_end = killed_unready_at + 1s;
  std::size_t failed = 0;
  std::size_t failed_in_kill_window = 0;
  std::size_t waited_on_paused = 0;
  Clock::duration longest_in_pause{};
  std::string unexpected;
  for (const auto& request : requests) {
    const bool in_kill_window = request.finished >= kill_at && request.started <= kill_window_end;
    if (!request.ok) {
      ++failed;
      if (in_kill_window) {
        ++failed_in_kill_window;
        CHECK_THAT(request.error, Catch::Contains("conversion webhook"));
      } else {
        unexpected += "a change failed outside the kill window: " + request.error + "\n";
      }
    }
    if (request.finished >= stop_at && request.started <= continue_at)
      longest_in_pause = std::max(longest_in_pause, request.finished - request.started);
    // Started after the paused process was marked not ready (and the API server saw it), seconds
    // before the pause ended (a change takes a fraction of one), and still running when it ended: it
    // waited for the paused process.
    if (request.started >= paused_unready_at + 1s && request.started < continue_at - 4s &&
        request.finished >= continue_at)
      ++waited_on_paused;
  }
  INFO(unexpected);
  CHECK(unexpected.empty());
  CHECK(waited_on_paused == 0);
  WARN("webhook availability: " << requests.size() << " v1alpha1 changes, " << failed << " failed ("
                                << failed_in_kill_window
                                << " in the kill window); SIGKILL marked not ready after "
                                << seconds_text(killed_unready_at - kill_at) << ", SIGSTOP after "
                                << seconds_text(paused_unready_at - stop_at)
                                << "; longest change across the pause " << seconds_text(longest_in_pause)
                                << " (probe period " << seconds_text(kProbePeriod) << ", timeout "
                                << seconds_text(kProbeTimeout) << ")");
}
