// namespace-labeller: a second controller on my-operator's runtime, to show what a controller costs
// to write on it. It keeps the label myorg.io/has-myresources=true on every namespace that holds at
// least one MyResource, and removes it from namespaces that hold none.
//
// Namespaces are the primary kind; MyResource events map to their namespace. Both caches come
// from the manager's registry (shared with any other controller of the process that asks for the
// same kind), and the label is written through the cached writer, so the next reconcile sees it.
//
//   namespace-labeller [--kubeconfig FILE] [--health-probe-bind-address :8081]
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/transport.h"
#include "myresource/types.h"
#include "runtime/builder.h"
#include "runtime/manager.h"
#include "runtime/signal_watcher.h"

namespace {

using namespace myop;

constexpr std::string_view kLabel = "myorg.io/has-myresources";

class NamespaceLabeller final : public runtime::Reconciler {
 public:
  NamespaceLabeller(runtime::Manager& manager, std::shared_ptr<runtime::InformerSet> namespaces,
                    std::shared_ptr<runtime::InformerSet> myresources)
      : writer_(manager.writer()), namespaces_(std::move(namespaces)), myresources_(std::move(myresources)) {}

  runtime::ReconcileResult reconcile(const runtime::ReconcileRequest& request) override {
    auto space = namespaces_->get(request.key);
    if (!space || space->view().is_being_deleted()) return runtime::ReconcileResult::done();
    bool holds = false;
    for (const auto& resource : myresources_->list())
      holds = holds || resource->namespace_name() == request.key.name;
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
  std::shared_ptr<runtime::InformerSet> namespaces_;
  std::shared_ptr<runtime::InformerSet> myresources_;
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
  kube::ConfigSearch search;
  search.kubeconfig_path = flag(argc, argv, "--kubeconfig", "");
  auto config = kube::load_client_config(search);
  if (!config)
    return spdlog::critical("no usable cluster configuration: {}", config.error().message), EXIT_FAILURE;
  auto transport = kube::make_https_transport(config.value(), {});
  if (!transport) return spdlog::critical("{}", transport.error().message), EXIT_FAILURE;

  runtime::ManagerOptions options;
  options.client = std::make_shared<kube::Client>(transport.value(), "namespace-labeller");
  options.field_manager = "namespace-labeller";
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = flag(argc, argv, "--health-probe-bind-address", ":8081");
  runtime::Manager manager(options);

  auto namespaces = manager.informers().informer(kube::resources::namespaces(), {});
  auto myresources = manager.informers().informer(myresource::myresource_type(), {});
  auto to_namespace = runtime::enqueue_mapped([](const runtime::ObjectEvent& event) {
    return std::vector<runtime::ObjectKey>{{"", std::string(event.object->namespace_name())}};
  });
  runtime::ControllerBuilder(manager, "namespace-labeller")
      .for_kind(kube::resources::namespaces())
      .watches(myresource::myresource_type(), to_namespace)
      .complete(std::make_shared<NamespaceLabeller>(manager, namespaces, myresources));
  return manager.run(stop.get_token());
}
