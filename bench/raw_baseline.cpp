// raw_baseline: the floor for every benchmark scenario.
//
// It does, with our own client (src/kube) and nothing else, only the writes an operator must make for
// each scenario, at a fixed concurrency: no cache, no watch, no work queue. bench/run starts it in place
// of an operator, while the harness makes the same user changes it makes for operators, so the time it
// takes is what the API server (and the control plane behind it) can do on this machine.
//
//   create  per object: PATCH finalizer on the MyResource (retried until the object exists), POST the
//           Deployment with a controller ownerReference, PATCH status (observedGeneration, Ready=True).
//   update  per object: GET the MyResource until spec.image is --image, PATCH the Deployment's image
//           (strategic merge), PATCH status.
//   delete  per object: GET the MyResource until it carries a deletionTimestamp, DELETE the Deployment,
//           PATCH the finalizer away.
//   latency reads "namespace name image" lines on stdin (the harness's single changes) and does the
//           update writes for each at once, printing "done namespace/name" when finished. The operator has to
//           notice a change through its watch; the baseline is told, so this is a lower bound.
//
// Objects are named <prefix>-<i> in namespace <prefix>-ns-<i % namespaces>, as bench/run creates them.
// Polling GETs are reads; the harness counts writes by verb from the audit log.
#include <utility>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/transport.h"

namespace {

using namespace std::chrono_literals;

// The baseline knows only the client layer, as a hand-written operator would. It works on v1beta1, the
// storage version, as the operator does: no request of the scenarios goes through the conversion webhook.
const myop::kube::ResourceType kMyResources{"myorg.io", "v1beta1", "myresources", true, "MyResource"};
using myop::kube::Client;
using myop::kube::PatchType;
using myop::kube::Reason;

struct Options {
  std::string mode;
  std::string kubeconfig;
  std::string prefix = "bench";
  std::string image;
  int count = 0;
  int namespaces = 10;
  int concurrency = 4;
  double qps = 0;  // <= 0: no client-side limit
  int timeout_seconds = 1800;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(
      stderr,
      "raw_baseline: %s\n"
      "usage: raw_baseline create|update|delete|latency --kubeconfig FILE [--n N] [--image IMG]\n"
      "       [--prefix bench] [--namespaces 10] [--concurrency 4] [--qps 0] [--timeout-seconds 1800]\n",
      message);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  if (argc < 2) usage("name a mode");
  Options options;
  options.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    std::string value = argv[++i];
    if (flag == "--kubeconfig")
      options.kubeconfig = value;
    else if (flag == "--n")
      options.count = std::stoi(value);
    else if (flag == "--image")
      options.image = value;
    else if (flag == "--prefix")
      options.prefix = value;
    else if (flag == "--namespaces")
      options.namespaces = std::stoi(value);
    else if (flag == "--concurrency")
      options.concurrency = std::stoi(value);
    else if (flag == "--qps")
      options.qps = std::stod(value);
    else if (flag == "--timeout-seconds")
      options.timeout_seconds = std::stoi(value);
    else
      usage(("unknown flag " + flag).c_str());
  }
  if (options.mode != "create" && options.mode != "update" && options.mode != "delete" &&
      options.mode != "latency")
    usage("mode must be create, update, delete or latency");
  if (options.mode != "latency" && options.count <= 0) usage("--n must be positive");
  if (options.mode == "update" && options.image.empty()) usage("--image is required for update");
  return options;
}

std::string json_string(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.c_str(), static_cast<rapidjson::SizeType>(text.size()));
  return buffer.GetString();
}

std::string string_at(const rapidjson::Value& object, std::initializer_list<const char*> path) {
  const rapidjson::Value* value = &object;
  for (const char* key : path) {
    if (!value->IsObject()) return "";
    auto member = value->FindMember(key);
    if (member == value->MemberEnd()) return "";
    value = &member->value;
  }
  return value->IsString() ? std::string(value->GetString(), value->GetStringLength()) : "";
}

std::int64_t int_at(const rapidjson::Value& object, std::initializer_list<const char*> path) {
  const rapidjson::Value* value = &object;
  for (const char* key : path) {
    if (!value->IsObject()) return 0;
    auto member = value->FindMember(key);
    if (member == value->MemberEnd()) return 0;
    value = &member->value;
  }
  return value->IsInt64() ? value->GetInt64() : 0;
}

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[32];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

class Baseline {
 public:
  Baseline(Options options, std::shared_ptr<Client> client)
      : options_(std::move(options)),
        client_(std::move(client)),
        deadline_(std::chrono::steady_clock::now() + std::chrono::seconds(options_.timeout_seconds)) {}

  std::string namespace_of(int index) const {
    return options_.prefix + "-ns-" + std::to_string(index % options_.namespaces);
  }
  std::string name_of(int index) const { return options_.prefix + "-" + std::to_string(index); }

  // Runs `work` for every index on `concurrency` threads; returns the number that failed.
  template <typename Work>
  int for_each_object(Work work) {
    std::atomic<int> next{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < options_.concurrency; ++t) {
      threads.emplace_back([&] {
        for (int index = next++; index < options_.count; index = next++) {
          if (!work(namespace_of(index), name_of(index))) ++failures;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    return failures;
  }

  bool create(const std::string& ns, const std::string& name) {
    auto mr = kMyResources;
    // 1. Finalizer, retried until the harness has created the object.
    auto owner = retry_until([&] {
      return client_->patch(mr, ns, name, PatchType::Merge,
                            R"({"metadata":{"finalizers":["myorg.io/finalizer"]}})");
    });
    if (!owner) return false;
    const auto& object = *owner;
    std::string uid = string_at(object, {"metadata", "uid"});
    std::int64_t generation = int_at(object, {"metadata", "generation"});
    std::string image = string_at(object, {"spec", "image"});
    std::int64_t replicas = int_at(object, {"spec", "replicas"});
    if (object.HasMember("spec") && !object["spec"].HasMember("replicas")) replicas = 1;

    // 2. The Deployment.
    std::string labels = R"({"app.kubernetes.io/name":)" + json_string(name) +
                         R"(,"app.kubernetes.io/managed-by":"my-operator","myorg.io/myresource":)" +
                         json_string(name) + R"(,"myorg.io/track":"stable"})";
    std::string selector =
        R"({"app.kubernetes.io/name":)" + json_string(name) + R"(,"myorg.io/track":"stable"})";
    std::string body =
        R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":)" + json_string(name) +
        R"(,"labels":)" + labels + R"(,"annotations":{"myorg.io/observed-generation":")" +
        std::to_string(generation) +
        R"("},"ownerReferences":[{"apiVersion":"myorg.io/v1beta1","kind":"MyResource","name":)" +
        json_string(name) + R"(,"uid":)" + json_string(uid) +
        R"(,"controller":true,"blockOwnerDeletion":true}]},"spec":{"replicas":)" + std::to_string(replicas) +
        R"(,"selector":{"matchLabels":)" + selector + R"(},"template":{"metadata":{"labels":)" + labels +
        R"(},"spec":{"containers":[{"name":"app","image":)" + json_string(image) + "}]}}}}";
    rapidjson::Document deployment;
    deployment.Parse(body.c_str());
    auto created =
        retry_until([&] { return client_->create(myop::kube::resources::deployments(), ns, deployment); },
                    Reason::AlreadyExists);
    if (!created && created.error().reason != Reason::AlreadyExists) return report(ns, name, created.error());

    // 3. Status.
    return write_status(ns, name, generation, image, replicas);
  }

  bool update(const std::string& ns, const std::string& name) {
    auto mr = kMyResources;
    // Wait (with reads) until the harness's change is visible.
    std::int64_t generation = 0;
    std::int64_t replicas = 1;
    while (true) {
      auto object = client_->get(mr, ns, name);
      if (object && string_at(*object, {"spec", "image"}) == options_.image) {
        generation = int_at(*object, {"metadata", "generation"});
        if ((*object)["spec"].HasMember("replicas")) replicas = int_at(*object, {"spec", "replicas"});
        break;
      }
      if (!object && object.error().reason != Reason::NotFound) return report(ns, name, object.error());
      if (past_deadline()) return report_timeout(ns, name);
      std::this_thread::sleep_for(20ms);
    }
    return update_writes(ns, name, options_.image, generation, replicas);
  }

  bool update_writes(const std::string& ns, const std::string& name, const std::string& image,
                     std::int64_t generation, std::int64_t replicas) {
    std::string patch = R"({"metadata":{"annotations":{"myorg.io/observed-generation":")" +
                        std::to_string(generation) +
                        R"("}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":)" +
                        json_string(image) + "}]}}}}";
    auto patched = retry_until([&] {
      return client_->patch(myop::kube::resources::deployments(), ns, name, PatchType::StrategicMerge, patch);
    });
    if (!patched) return false;
    return write_status(ns, name, generation, image, replicas);
  }

  bool remove(const std::string& ns, const std::string& name) {
    auto mr = kMyResources;
    while (true) {
      auto object = client_->get(mr, ns, name);
      if (!object && object.error().reason == Reason::NotFound) return true;  // already gone
      if (!object) return report(ns, name, object.error());
      if (!string_at(*object, {"metadata", "deletionTimestamp"}).empty()) break;
      if (past_deadline()) return report_timeout(ns, name);
      std::this_thread::sleep_for(20ms);
    }
    myop::kube::DeleteOptions background;
    background.propagation_policy = "Background";
    auto deleted = client_->remove(myop::kube::resources::deployments(), ns, name, background);
    if (!deleted && deleted.error().reason != Reason::NotFound) return report(ns, name, deleted.error());
    auto patched = client_->patch(mr, ns, name, PatchType::Merge, R"({"metadata":{"finalizers":null}})");
    if (!patched && patched.error().reason != Reason::NotFound) return report(ns, name, patched.error());
    return true;
  }

  // One change at a time from stdin: "namespace name image".
  int latency() {
    std::string ns, name, image;
    int failures = 0;
    while (std::cin >> ns >> name >> image) {
      auto object = client_->get(kMyResources, ns, name);
      bool ok = false;
      if (object) {
        std::int64_t replicas =
            (*object)["spec"].HasMember("replicas") ? int_at(*object, {"spec", "replicas"}) : 1;
        ok = update_writes(ns, name, image, int_at(*object, {"metadata", "generation"}), replicas);
      } else {
        report(ns, name, object.error());
      }
      if (!ok) ++failures;
      std::cout << (ok ? "done " : "failed ") << ns << "/" << name << std::endl;
    }
    return failures;
  }

 private:
  bool write_status(const std::string& ns, const std::string& name, std::int64_t generation,
                    const std::string& image, std::int64_t replicas) {
    std::string gen = std::to_string(generation);
    std::string status =
        R"({"status":{"observedGeneration":)" + gen + R"(,"image":)" + json_string(image) +
        R"(,"replicas":)" + std::to_string(replicas) +
        R"(,"conditions":[{"type":"Ready","status":"True","reason":"Available","message":"raw baseline","observedGeneration":)" +
        gen + R"(,"lastTransitionTime":")" + now_rfc3339() + R"("}]}})";
    auto patched = retry_until(
        [&] { return client_->patch(kMyResources, ns, name, PatchType::Merge, status, {}, "status"); });
    return static_cast<bool>(patched);
  }

  // Repeats `call` while it fails with NotFound, Conflict or a retryable server error; `accept` is a
  // reason that ends the loop as it is (e.g. AlreadyExists on create).
  template <typename Call>
  auto retry_until(Call call, std::optional<Reason> accept = std::nullopt) -> decltype(call()) {
    while (true) {
      auto result = call();
      if (result) return result;
      Reason reason = result.error().reason;
      if (accept && reason == *accept) return result;
      bool again = reason == Reason::NotFound || reason == Reason::Conflict ||
                   reason == Reason::TooManyRequests || reason == Reason::ServiceUnavailable ||
                   reason == Reason::Timeout;
      if (!again || past_deadline()) {
        std::fprintf(stderr, "raw_baseline: %s\n", result.error().to_string().c_str());
        return result;
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  bool past_deadline() const { return std::chrono::steady_clock::now() > deadline_; }

  bool report(const std::string& ns, const std::string& name, const myop::kube::Error& error) {
    std::lock_guard lock(output_mutex_);
    std::fprintf(stderr, "raw_baseline: %s/%s: %s\n", ns.c_str(), name.c_str(), error.to_string().c_str());
    return false;
  }
  bool report_timeout(const std::string& ns, const std::string& name) {
    std::lock_guard lock(output_mutex_);
    std::fprintf(stderr, "raw_baseline: %s/%s: timed out waiting for the harness's change\n", ns.c_str(),
                 name.c_str());
    return false;
  }

  Options options_;
  std::shared_ptr<Client> client_;
  std::chrono::steady_clock::time_point deadline_;
  std::mutex output_mutex_;
};

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_options(argc, argv);

  myop::kube::ConfigSearch search;
  search.kubeconfig_path = options.kubeconfig;
  auto config = myop::kube::load_client_config(search);
  if (!config) {
    std::fprintf(stderr, "raw_baseline: %s\n", config.error().to_string().c_str());
    return 1;
  }
  myop::kube::TransportOptions transport_options;
  transport_options.qps = options.qps;
  transport_options.burst = options.qps > 0 ? static_cast<int>(options.qps * 2) : 1;
  transport_options.user_agent = "raw-baseline";
  auto transport = myop::kube::make_https_transport(*config, transport_options);
  if (!transport) {
    std::fprintf(stderr, "raw_baseline: %s\n", transport.error().to_string().c_str());
    return 1;
  }
  auto client = std::make_shared<Client>(*transport, "raw-baseline");
  Baseline baseline(options, client);

  int failures = 0;
  if (options.mode == "create") {
    failures = baseline.for_each_object(
        [&](const std::string& ns, const std::string& name) { return baseline.create(ns, name); });
  } else if (options.mode == "update") {
    failures = baseline.for_each_object(
        [&](const std::string& ns, const std::string& name) { return baseline.update(ns, name); });
  } else if (options.mode == "delete") {
    failures = baseline.for_each_object(
        [&](const std::string& ns, const std::string& name) { return baseline.remove(ns, name); });
  } else {
    failures = baseline.latency();
  }
  if (failures > 0)
    std::fprintf(stderr, "raw_baseline: %s: %d objects failed\n", options.mode.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
