// Cache memory benchmark: the process's RSS with N cached ConfigMaps of 1 KiB data each, and the
// cost per object. Not a test.
//
//   cache_memory [--objects N] [--kubeconfig PATH --namespace NS]
//   cache_memory --operator-caches [--objects N] [--testdata DIR]
//   cache_memory --work-queue [--objects N]
//
// --operator-caches (issue 7): N MyResources and N Deployments, fed through two informers with the
// options my-operator gives its own (runtime::InformerOptions defaults: strip_for_cache), each
// object a copy of bench/testdata/{myresource,deployment}.json with its own name, namespace (10),
// uids and resourceVersion. Those two files are objects as the API server sent them (kubectl get -o
// json --show-managed-fields) after my-operator reconciled a bench MyResource: the MyResource with
// status, the Deployment with the controller's status and both managedFields. What it measures is
// the caches, in a process of their own: not the operator's whole RSS (add the operator's RSS with
// empty caches for that).
//
// Without --kubeconfig the objects are fed to the informer exactly as the watcher would deliver
// them (InitStart, InitApply x N, InitDone), each shaped like what the API server sends: metadata
// with uid, resourceVersion, creationTimestamp, labels, a kubectl last-applied-configuration
// annotation and managedFields, plus 1 KiB of data. With --kubeconfig the informer lists and
// watches the ConfigMaps of NS on a real cluster (create them first).
// --work-queue (issue 35): the heap a backlog of N keys waiting in a runtime::WorkQueue takes (bench-like
// names, "bench-0000042" in 10 namespaces), by malloc's in-use bytes before and after the adds: the
// queue's bookkeeping per key, what a storm's backlog adds to the operator's peak.
// Target (issue 4): under 2 KiB of RSS per cached object, on top of a base under 15 MiB.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <sstream>
#include <vector>

#include "kube/config.h"
#include "kube/transport.h"
#include "kube/watch_source.h"
#include "runtime/cache/informer.h"
#include "runtime/queue/workqueue.h"

using namespace myop;

namespace {

long rss_kib() {
  malloc_trim(0);
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string config_map_json(int index) {
  const std::string name = "bench-" + std::to_string(index);
  const std::string value(1024, 'x');
  char uid[40];
  std::snprintf(uid, sizeof uid, "5f1c2a3b-0000-4000-8000-%012d", index);
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":"bench","uid":")" + uid + R"(","resourceVersion":")" +
         std::to_string(100000 + index) +
         R"(","creationTimestamp":"2026-11-29T20:00:00Z","labels":{"app.kubernetes.io/name":"bench","set":"bulk"},)"
         R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"data\":{\"value\":\")" +
         value + R"(\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\")" + name +
         R"(\"}}"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1",)"
         R"("time":"2026-11-29T20:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:value":{}},)"
         R"("f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},)"
         R"("f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:set":{}}}}}]},"data":{"value":")" +
         value + R"("}})";
}

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The sample objects' own identity, replaced per copy.
constexpr const char* kSampleName = "bench-4711";
constexpr const char* kSampleNamespace = "memshape";
constexpr const char* kSampleMyResourceUid = "a18684f7-4683-46fa-9fdb-bd7f643d20e1";
constexpr const char* kSampleDeploymentUid = "f367518e-86c5-4d9b-a09e-92b8b6f54b0e";

std::string copy_of(const std::string& sample, int index, const std::string& sample_version) {
  char myresource_uid[40];
  char deployment_uid[40];
  std::snprintf(myresource_uid, sizeof myresource_uid, "5f1c2a3b-0000-4000-8000-%012d", index);
  std::snprintf(deployment_uid, sizeof deployment_uid, "5f1c2a3b-0000-4000-9000-%012d", index);
  std::string text = sample;
  replace_all(text, kSampleName, "bench-" + std::to_string(index));
  replace_all(text, std::string("\"") + kSampleNamespace + "\"",
              "\"bench-ns-" + std::to_string(index % 10) + "\"");
  replace_all(text, kSampleMyResourceUid, myresource_uid);
  replace_all(text, kSampleDeploymentUid, deployment_uid);
  replace_all(text, "\"resourceVersion\":\"" + sample_version + "\"",
              "\"resourceVersion\":\"" + std::to_string(100000 + index) + "\"");
  return text;
}

std::string resource_version_of(const std::string& sample) {
  auto parsed = kube::Object::parse(sample);
  return parsed ? std::string(parsed.value().resource_version()) : std::string();
}

bool feed(runtime::Informer& informer, const std::string& sample, int objects) {
  const std::string version = resource_version_of(sample);
  kube::WatcherEvent start;
  start.type = kube::WatcherEventType::InitStart;
  informer.handle(std::move(start));
  for (int i = 0; i < objects; ++i) {
    auto parsed = kube::Object::parse(copy_of(sample, i, version));
    if (!parsed) return false;
    kube::WatcherEvent event;
    event.type = kube::WatcherEventType::InitApply;
    event.object = std::move(parsed).value();
    informer.handle(std::move(event));
  }
  kube::WatcherEvent done;
  done.type = kube::WatcherEventType::InitDone;
  informer.handle(std::move(done));
  return true;
}

std::size_t pool_bytes_of(runtime::Informer& informer) {
  std::size_t bytes = 0;
  for (const auto& object : informer.cache().list()) bytes += object->allocated_bytes();
  return bytes;
}

int operator_caches(int objects, const std::string& testdata) {
  const std::string myresource = read_file(testdata + "/myresource.json");
  const std::string deployment = read_file(testdata + "/deployment.json");
  if (myresource.empty() || deployment.empty()) {
    std::cerr << "cannot read " << testdata << "/{myresource,deployment}.json\n";
    return 1;
  }
  runtime::InformerOptions myresource_options;
  myresource_options.name = "myresources";
  runtime::InformerOptions deployment_options;
  deployment_options.name = "deployments";
  runtime::Informer myresources(nullptr, myresource_options);
  runtime::Informer deployments(nullptr, deployment_options);
  const long base = rss_kib();
  if (!feed(myresources, myresource, objects)) return 1;
  const long with_myresources = rss_kib();
  if (!feed(deployments, deployment, objects)) return 1;
  const long loaded = rss_kib();
  const std::size_t myresource_pool = pool_bytes_of(myresources);
  const std::size_t deployment_pool = pool_bytes_of(deployments);
  const auto per = [](double bytes, std::size_t count) { return count ? bytes / count : 0.0; };
  std::printf("cached MyResources:            %zu (sample %zu bytes of JSON)\n", myresources.cache().size(),
              myresource.size());
  std::printf("cached Deployments:            %zu (sample %zu bytes of JSON)\n", deployments.cache().size(),
              deployment.size());
  std::printf("base RSS (empty caches):       %.1f MiB\n", base / 1024.0);
  std::printf("RSS with MyResources:          %.1f MiB\n", with_myresources / 1024.0);
  std::printf("RSS with both:                 %.1f MiB\n", loaded / 1024.0);
  std::printf("RSS per MyResource:            %.0f bytes\n",
              per((with_myresources - base) * 1024.0, myresources.cache().size()));
  std::printf("RSS per Deployment:            %.0f bytes\n",
              per((loaded - with_myresources) * 1024.0, deployments.cache().size()));
  std::printf("packed per MyResource:         %.0f bytes\n",
              per(myresources.cache().packed_bytes(), myresources.cache().size()));
  std::printf("packed per Deployment:         %.0f bytes\n",
              per(deployments.cache().packed_bytes(), deployments.cache().size()));
  std::printf("JSON pool per MyResource read: %.0f bytes\n",
              per(myresource_pool, myresources.cache().size()));
  std::printf("JSON pool per Deployment read: %.0f bytes\n",
              per(deployment_pool, deployments.cache().size()));
  return 0;
}

}  // namespace

std::size_t heap_in_use() { return mallinfo2().uordblks; }

int work_queue(int keys) {
  runtime::WorkQueue queue;
  std::vector<runtime::ObjectKey> names;
  names.reserve(static_cast<std::size_t>(keys));
  for (int i = 0; i < keys; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "bench-%07d", i);
    names.push_back({"bench-" + std::to_string(i % 10), name});
  }
  const std::size_t before = heap_in_use();
  for (const auto& key : names) queue.add(key, {runtime::Priority::high});
  const std::size_t after = heap_in_use();
  std::printf("work queue: %d keys waiting, heap %.1f KiB, %.0f bytes per key\n", keys,
              static_cast<double>(after - before) / 1024.0,
              static_cast<double>(after - before) / static_cast<double>(keys));
  return queue.depth() == static_cast<std::size_t>(keys) ? 0 : 1;
}

int main(int argc, char** argv) {
  int objects = 10000;
  std::string kubeconfig;
  std::string namespace_name = "bench";
  std::string testdata = MYOP_BENCH_TESTDATA;
  bool operator_shapes = false;
  bool queue_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--operator-caches")) operator_shapes = true;
    if (!std::strcmp(argv[i], "--work-queue")) queue_only = true;
    if (i + 1 >= argc) continue;
    if (!std::strcmp(argv[i], "--objects")) objects = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--kubeconfig")) kubeconfig = argv[i + 1];
    if (!std::strcmp(argv[i], "--namespace")) namespace_name = argv[i + 1];
    if (!std::strcmp(argv[i], "--testdata")) testdata = argv[i + 1];
  }
  if (operator_shapes) return operator_caches(objects, testdata);
  if (queue_only) return work_queue(objects);

  std::shared_ptr<kube::WatchSource> source;
  if (!kubeconfig.empty()) {
    kube::ConfigSearch search;
    search.kubeconfig_path = kubeconfig;
    auto config = kube::load_client_config(search);
    if (!config) {
      std::cerr << config.error().to_string() << "\n";
      return 1;
    }
    auto transport = kube::make_https_transport(config.value());
    if (!transport) {
      std::cerr << transport.error().to_string() << "\n";
      return 1;
    }
    auto client = std::make_shared<kube::Client>(transport.value(), "cache-memory-bench");
    source = kube::make_client_watch_source(client, kube::resources::config_maps(), namespace_name);
  }
  runtime::InformerOptions options;
  options.name = "configmaps";
  options.resync_period = runtime::Duration::zero();
  runtime::Informer informer(source, options);
  const long base = rss_kib();

  if (source) {
    informer.start();
    while (!informer.has_synced()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } else {
    kube::WatcherEvent start;
    start.type = kube::WatcherEventType::InitStart;
    informer.handle(std::move(start));
    for (int i = 0; i < objects; ++i) {
      auto parsed = kube::Object::parse(config_map_json(i));
      if (!parsed) return 1;
      kube::WatcherEvent event;
      event.type = kube::WatcherEventType::InitApply;
      event.object = std::move(parsed).value();
      informer.handle(std::move(event));
    }
    kube::WatcherEvent done;
    done.type = kube::WatcherEventType::InitDone;
    informer.handle(std::move(done));
  }
  const long loaded = rss_kib();
  const std::size_t cached = informer.cache().size();
  std::size_t pool_bytes = 0;
  for (const auto& object : informer.cache().list()) pool_bytes += object->allocated_bytes();
  std::printf("cached objects:          %zu\n", cached);
  std::printf("base RSS:                %.1f MiB\n", base / 1024.0);
  std::printf("RSS with cache:          %.1f MiB\n", loaded / 1024.0);
  std::printf("RSS per cached object:   %.0f bytes\n", cached ? (loaded - base) * 1024.0 / cached : 0.0);
  std::printf("packed per object:       %.0f bytes\n",
              cached ? static_cast<double>(informer.cache().packed_bytes()) / cached : 0.0);
  std::printf("JSON pool per object read: %.0f bytes\n",
              cached ? static_cast<double>(pool_bytes) / cached : 0.0);
  informer.stop();
  return 0;
}
