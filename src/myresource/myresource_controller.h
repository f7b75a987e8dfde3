#pragma once
// The MyResource operator on a manager: the controller (MyResources, the Deployments they own, the
// feature-flag ConfigMap), the orphan sweeper (leader-only) and the domain metrics, all on the
// manager's shared caches and cached writer. main.cpp calls this once.
#include <chrono>
#include <memory>
#include <string>

#include "runtime/controller/controller.h"
#include "runtime/manager/manager.h"

namespace myop::myresource {

struct MyResourceControllerOptions {
  std::string operator_namespace = "default";
  // The feature-flag ConfigMap in operator_namespace.
  std::string config_map;
  int max_concurrent_reconciles = 4;
  std::chrono::seconds orphan_sweep_period = std::chrono::minutes(5);
  // ReconcilerOptions::stuck_deletion_timeout.
  std::chrono::milliseconds stuck_deletion_timeout = std::chrono::seconds(60);
  std::string version;
};

// Whether a MyResource event is worth a reconcile: anything but a status-only write (which would loop
// on our own status updates), and spec changes even when the generation stays.
bool myresource_changed(const runtime::ObjectEvent& event);

std::shared_ptr<runtime::Controller> add_myresource_controller(runtime::Manager& manager,
                                                               const MyResourceControllerOptions& options);

}  // namespace myop::myresource
