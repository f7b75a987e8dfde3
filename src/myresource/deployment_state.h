// What the operator reads from a live Deployment (from the cache): the few fields that decide status,
// canary progress and "does it run what we want?". Reading them once, here, keeps the decision
// functions (canary.h, status.h) free of JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

}  // namespace myop::myresource
