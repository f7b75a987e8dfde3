// namespace-labeller: a second controller on my-operator's runtime, to show what a controller costs
// to write on it. It keeps the label myorg.io/has-myresources=true on every namespace that holds at
// least one MyResource, and removes it from namespaces that hold none.
//
// Namespaces are the primary kind; MyResource events map to their namespace. The reconciler reads
// the builder's caches of both kinds (shared with any other controller of the process that watches
// them) and writes the label through the manager's cached writer, so its next reconcile sees it.
//
//   namespace-labeller [--kubeconfig FILE] [--health-probe-bind-address :8081]
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "kube/connect.h"
#include "runtime/controller/builder.h"
#include "runtime/manager/manager.h"
#include "runtime/manager/signal_watcher.h"

namespace {

using namespace myop;

constexpr std::string_view kLabel = "myorg.io/has-myresources";

// MyResources are only counted here: their kind is all this controller needs to know of them.
kube::ResourceType myresources() { return {"myorg.io", "v1beta1", "myresources", true, "MyResource"}; }

class NamespaceLabeller final : public runtime::Reconciler {
 public:
  NamespaceLabeller(runtime::Writer& writer, runtime::CacheReader namespaces,
                    runtime::CacheReader myresources)
      : writer_(writer), namespaces_(std::move(namespaces)), myresources_(std::move(myresources)) {}

  runtime::ReconcileResult reconcile(const runtime::ReconcileRequest& request) override {
    auto space = namespaces_.get(request.key);
    if (!space || space->view().is_being_deleted()) return runtime::ReconcileResult::done();
    const bool holds = !myresources_.list(request.key.name).empty();
    if (space->view().label(kLabel).has_value() == holds) return runtime::ReconcileResult::done();
    const std::string body = std::string(R"({"metadata":{"labels":{")") + std::string(kLabel) +
                             (holds ? R"(":"true"}}})" : R"(":null}}})");
    auto patched = writer_.patch(kube::resources::namespaces(), request.key, kube::PatchType::Merge, body, {},
                                 request.stop);
    if (!patched)
      return runtime::ReconcileResult::error(std::move(patched).error(), "labelling " + request.key.name);
    spdlog::info("namespace {}: {} {}", request.key.name, holds ? "labelled" : "unlabelled", kLabel);
    return runtime::ReconcileResult::done();
  }

 private:
  runtime::Writer& writer_;
  runtime::CacheReader namespaces_;
  runtime::CacheReader myresources_;
};

std::string flag(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::stop_source stop;
  runtime::SignalWatcher signals(stop);
  kube::ConfigSearch cluster;
  cluster.kubeconfig_path = flag(argc, argv, "--kubeconfig", "");
  auto connection = kube::connect(cluster, {}, "namespace-labeller");
  if (!connection) return spdlog::critical("{}", connection.error().message), EXIT_FAILURE;

  runtime::ManagerOptions options;
  options.client = connection->client;
  options.field_manager = "namespace-labeller";
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = flag(argc, argv, "--health-probe-bind-address", ":8081");
  runtime::Manager manager(options);

  auto to_namespace = runtime::enqueue_mapped([](const runtime::ObjectEvent& event) {
    return std::vector<runtime::ObjectKey>{{"", std::string(event.object->namespace_name())}};
  });
  runtime::ControllerBuilder builder(manager, "namespace-labeller");
  builder.for_kind(kube::resources::namespaces()).watches(myresources(), to_namespace);
  builder.complete(std::make_shared<NamespaceLabeller>(
      manager.writer(), builder.cache(kube::resources::namespaces()), builder.cache(myresources())));
  return manager.run(stop.get_token());
}
