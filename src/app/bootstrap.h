#pragma once
// From Options to a running manager's parts: the process tuning, the cluster configuration, the API
// client, and the manager with its probes, metrics (optionally secure), caches and leader election.
// Each failure comes back as a sentence naming what is wrong and what to do about it.
#include <chrono>
#include <memory>
#include <string>

#include "app/options.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "runtime/manager/manager.h"

namespace myop::app {

// Allocator settings; call first, before any other thread starts.
void tune_process();

// The manager for `options`, on a client of the configured cluster, after the preflight checks.
// `operator_namespace` receives the operator's own namespace (POD_NAMESPACE, else the context's).
kube::Result<std::unique_ptr<runtime::Manager>> make_manager(const Options& options,
                                                             std::string& operator_namespace);

// How long shutdown waits for queued trace spans to reach the collector.
inline constexpr std::chrono::milliseconds kTraceFlushTimeout{std::chrono::seconds(5)};

// After the manager's run: sends the spans still queued (within kTraceFlushTimeout) and stops the
// exporter. Nothing to do with tracing off.
void finish_tracing(runtime::Manager& manager);

}  // namespace myop::app
