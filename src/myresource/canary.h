// Canary decisions (docs/design.md "Canary") as one pure function of the MyResource, the effective
// feature flags, the live canary Deployment and the time.
//
// It reads the typed v1beta1 fields only (types.h; v1alpha1 objects are converted when parsed).
//
// Steps: spec.canary.enabled plus spec.canary.targetVersion (v1alpha1: annotation myorg.io/canary
// "true" plus myorg.io/targetVersion) run "<name>-canary" with the
// image's repository at that tag (Canary=True/CanaryRunning). When spec.image reaches the target the
// canary is deleted (Canary=False/CanaryPromoted). A canary not Available within
// spec.canary.progressDeadlineSeconds is scaled to 0 and kept so the failure stays visible, the stable
// Deployment untouched (Canary=False/CanaryFailed plus a Warning event); it stays failed until the
// target changes. "Not Available" is either the canary Deployment's own ProgressDeadlineExceeded
// (its deadline is set to ours, and restarts with each rollout) or, as a backstop, no replica
// available once our clock (started when this image was first planned) passes the deadline.
// spec.canary.enabled false or absent (v1alpha1: removing the annotation) deletes the canary and the
// condition.
//
// The caller does not call this while spec.paused or while the MyResource is being deleted.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "myresource/conditions.h"
#include "myresource/deployment_state.h"
#include "myresource/desired.h"
#include "myresource/features.h"
#include "myresource/types.h"

namespace myop::myresource {

enum class CanaryPhase {
  NotRequested,   // spec.canary.enabled not true (v1alpha1: no annotation, or not "true")
  Disabled,       // requested, but the canary feature flag is off
  InvalidTarget,  // requested with a missing or invalid spec.canary.targetVersion
  Running,        // the canary runs (or is starting)
  Promoted,       // spec.image carries the target tag
  Failed,         // not Available within the deadline: scaled to 0
};

enum class CanaryAction {
  None,    // nothing to write
  Apply,   // server-side apply desired_canary_deployment(resource, plan)
  Delete,  // delete "<name>-canary"
};

struct CanaryEvent {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
};

struct CanaryDecision {
  CanaryPhase phase = CanaryPhase::NotRequested;
  CanaryAction action = CanaryAction::None;
  CanaryDeploymentPlan plan;           // meaningful for Apply
  std::optional<Condition> condition;  // the Canary condition to set; nullopt: remove it
  std::optional<CanaryEvent> event;    // only when this step changes the Canary condition
  // While a canary is starting: when to look again so the deadline is noticed on time even if the
  // canary Deployment never changes.
  std::optional<std::chrono::seconds> requeue_after;
};

std::string_view to_string(CanaryPhase phase);

// `canary` is the live "<name>-canary" Deployment from the cache, nullopt when there is none.
CanaryDecision decide_canary(const MyResource& resource, const Features& features,
                             const std::optional<DeploymentState>& canary, WallTime now);

}  // namespace myop::myresource
