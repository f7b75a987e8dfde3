// Shared helpers of the runtime integration tests: an admin client of the real control plane, a
// transport that a test can cut off from the API server, and bounded waiting.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/transport.h"
#include "support/testenv.h"

namespace myop::runtime::testing {

inline std::shared_ptr<kube::Transport> admin_transport() {
  kube::ConfigSearch search;
  search.kubeconfig_path = testenv::kubeconfig_path();
  auto config = kube::load_client_config(search);
  if (!config) FAIL("cannot load the admin kubeconfig: " << config.error().to_string());
  kube::TransportOptions options;
  options.qps = 500;
  options.burst = 1000;
  auto transport = kube::make_https_transport(config.value(), options);
  if (!transport) FAIL("cannot make a transport: " << transport.error().to_string());
  return transport.value();
}

inline std::shared_ptr<kube::Client> admin_client() {
  return std::make_shared<kube::Client>(admin_transport(), "myop-runtime-integration");
}

// Wraps a transport; while cut, every request fails as if the network were down, and every
// request that does go out is recorded (method, path, time) so a test can assert on writes.
class CuttableTransport final : public kube::Transport {
 public:
  explicit CuttableTransport(std::shared_ptr<kube::Transport> inner) : inner_(std::move(inner)) {}

  kube::Result<kube::Response> send(const kube::Request& request, std::stop_token stop) override {
    if (cut_) return kube::make_error(kube::Reason::Transport, "cut off by the test");
    record(request);
    return inner_->send(request, stop);
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request& request, const kube::ChunkHandler& on_chunk,
                                       std::stop_token stop, const kube::StreamOptions& options) override {
    if (cut_) return kube::make_error(kube::Reason::Transport, "cut off by the test");
    record(request);
    return inner_->stream(request, on_chunk, stop, options);
  }
  const std::string& host() const override { return inner_->host(); }

  void cut() { cut_ = true; }
  void reconnect() { cut_ = false; }

  struct Sent {
    std::string method;
    std::string path;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Sent> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }

 private:
  void record(const kube::Request& request) {
    std::lock_guard lock(mutex_);
    sent_.push_back({request.method, request.path, std::chrono::steady_clock::now()});
  }

  std::shared_ptr<kube::Transport> inner_;
  std::atomic<bool> cut_{false};
  std::mutex mutex_;
  std::vector<Sent> sent_;
};

// Polls `condition` every 50 ms for up to `limit`; true when it held. The limit only turns a hang
// into a failure; tests do not assert on how fast something happened unless the behaviour is a
// timing guarantee.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

}  // namespace myop::runtime::testing
