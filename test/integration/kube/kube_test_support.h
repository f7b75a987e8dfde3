// Shared helpers of the kube client integration tests: clients for the admin and for other identities
// of the real control plane, and a request-metrics recorder.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/transport.h"
#include "support/testenv.h"

namespace myop::kube::testing {

// The admin kubeconfig of the test control plane, resolved by our own loader.
inline ClientConfig admin_config() {
  ConfigSearch search;
  search.kubeconfig_path = testenv::kubeconfig_path();
  auto config = load_client_config(search);
  if (!config) FAIL("cannot load the admin kubeconfig: " << config.error().to_string());
  return config.value();
}

inline std::shared_ptr<Transport> transport_for(const ClientConfig& config, TransportOptions options = {}) {
  auto transport = make_https_transport(config, std::move(options));
  if (!transport) FAIL("cannot make a transport: " << transport.error().to_string());
  return transport.value();
}

inline Client client_for(const ClientConfig& config, TransportOptions options = {}) {
  return Client(transport_for(config, std::move(options)), "myop-integration");
}

inline Client admin_client() { return client_for(admin_config()); }

inline rapidjson::Document parse_json(const std::string& text) {
  rapidjson::Document document;
  document.Parse(text.c_str());
  if (document.HasParseError()) FAIL("test JSON does not parse: " << text);
  return document;
}

inline std::string string_at(const rapidjson::Value& value, std::initializer_list<const char*> path) {
  const rapidjson::Value* current = &value;
  for (const char* key : path) {
    if (!current->IsObject() || !current->HasMember(key)) return {};
    current = &(*current)[key];
  }
  return current->IsString() ? std::string(current->GetString(), current->GetStringLength()) : std::string();
}

// The user name the API server sees for `client` (authentication.k8s.io/v1 SelfSubjectReview).
inline Result<std::string> who_am_i(Client& client) {
  Request request;
  request.method = "POST";
  request.path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
  request.body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
  request.content_type = "application/json";
  auto review = client.request_json(request);
  if (!review) return std::move(review).error();
  return string_at(review.value(), {"status", "userInfo", "username"});
}

// Counts requests by code, as rest_client_requests_total would, and the body bytes received.
class RecordingMetrics final : public RequestMetricsObserver {
 public:
  void observe(const RequestObservation& observation) override {
    std::lock_guard lock(mutex_);
    ++by_code_[std::string(observation.code)];
  }
  int count(const std::string& code) {
    std::lock_guard lock(mutex_);
    return by_code_[code];
  }
  std::string summary() {
    std::lock_guard lock(mutex_);
    std::string text;
    for (const auto& [code, number] : by_code_) text += code + "=" + std::to_string(number) + " ";
    return text;
  }
  void observe_received_bytes(ReceivedKind kind, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    received_[kind] += bytes;
  }
  std::size_t received(ReceivedKind kind) {
    std::lock_guard lock(mutex_);
    return received_[kind];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> by_code_;
  std::map<ReceivedKind, std::size_t> received_;
};

}  // namespace myop::kube::testing
