// What the operator reads from a live Deployment (from the cache): the few fields that decide status,
// canary progress and "does it run what we want?". Reading them once, here, keeps the decision
// functions (canary.h, status.h) free of JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kube/object.h"

namespace myop::myresource {

struct DeploymentState {
  std::string name;
  std::string uid;
  std::string creation_timestamp;
  std::int64_t generation = 0;
  std::int64_t observed_generation = 0;  // status.observedGeneration
  std::int32_t desired_replicas = 0;     // spec.replicas (1 when absent, the API default)
  std::int32_t replicas = 0;             // status.replicas
  std::int32_t ready_replicas = 0;
  std::int32_t updated_replicas = 0;
  std::int32_t available_replicas = 0;
  std::string image;                        // image of the container named "app" (else the first container)
  std::string spec_hash;                    // annotation myorg.io/spec-hash
  std::string canary_started_at;            // annotation myorg.io/canary-started-at
  bool progress_deadline_exceeded = false;  // condition Progressing=False/ProgressDeadlineExceeded

  // The Deployment controller has seen the latest spec, and every desired replica runs the latest
  // pod template and is available.
  bool rolled_out() const;
};

DeploymentState observe_deployment(const kube::JsonValue& deployment);

// The finalizer of a foreground deletion: the garbage collector deletes the object's dependents
// (a Deployment's ReplicaSets, their pods), then drops it.
inline constexpr std::string_view kForegroundDeletionFinalizer = "foregroundDeletion";

// How much longer a Deployment in foreground deletion may take before it counts as stuck: its pods'
// termination grace period (spec.template.spec.terminationGracePeriodSeconds, 30 s when absent) plus
// `slack`, from its deletionTimestamp. Zero or less: stuck now (Kubernetes' garbage collector can miss
// the deletion for good, kubernetes/kubernetes#115570, e.g. across an API server restart). nullopt when
// the Deployment is not in a foreground deletion, or its deletionTimestamp does not parse.
std::optional<std::chrono::milliseconds> foreground_deletion_time_left(
    const kube::JsonValue& deployment, std::chrono::system_clock::time_point now,
    std::chrono::milliseconds slack);

}  // namespace myop::myresource
