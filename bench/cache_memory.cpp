// Cache memory benchmark: the process's RSS with N cached ConfigMaps of 1 KiB data each, and the
// cost per object. Not a test.
//
//   cache_memory [--objects N] [--kubeconfig PATH --namespace NS]
//
// Without --kubeconfig the objects are fed to the informer exactly as the watcher would deliver
// them (InitStart, InitApply x N, InitDone), each shaped like what the API server sends: metadata
// with uid, resourceVersion, creationTimestamp, labels, a kubectl last-applied-configuration
// annotation and managedFields, plus 1 KiB of data. With --kubeconfig the informer lists and
// watches the ConfigMaps of NS on a real cluster (create them first).
// Target (issue 4): under 2 KiB of RSS per cached object, on top of a base under 15 MiB.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "kube/config.h"
#include "kube/transport.h"
#include "kube/watch_source.h"
#include "runtime/informer.h"

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
         R"(","namespace":"bench","uid":")" + uid + R"(","resourceVersion":")" + std::to_string(100000 + index) +
         R"(","creationTimestamp":"2026-11-29T20:00:00Z","labels":{"app.kubernetes.io/name":"bench","set":"bulk"},)"
         R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"data\":{\"value\":\")" +
         value + R"(\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\")" + name +
         R"(\"}}"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1",)"
         R"("time":"2026-11-29T20:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:value":{}},)"
         R"("f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},)"
         R"("f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:set":{}}}}}]},"data":{"value":")" + value + R"("}})";
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 10000;
  std::string kubeconfig;
  std::string namespace_name = "bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--objects")) objects = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--kubeconfig")) kubeconfig = argv[i + 1];
    if (!std::strcmp(argv[i], "--namespace")) namespace_name = argv[i + 1];
  }

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
    auto client = std::make_shared<kube::Client>(transport.value());
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
  std::printf("JSON pool per object:    %.0f bytes\n", cached ? static_cast<double>(pool_bytes) / cached : 0.0);
  informer.stop();
  return 0;
}
