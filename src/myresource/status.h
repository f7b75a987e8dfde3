// The status a MyResource should show, computed from what the reconciler saw, and the decision
// whether it differs from the status it has (status is written only when it changes: a write that
// changes nothing still bumps resourceVersion and wakes every watcher).
//
// Conditions: Ready (the stable Deployment runs the current spec, fully available), Progressing (a
// rollout or deletion is under way), Degraded (something needs a person: invalid spec, reconcile
// error, stuck rollout, failed cleanup) and Canary (see canary.h). observedGeneration is the
// generation this status describes; lastTransitionTime moves only when a condition's status flips.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/object.h"
#include "myresource/canary.h"
#include "myresource/deployment_state.h"
#include "myresource/types.h"

namespace myop::myresource {

struct StatusInputs {
  std::vector<std::string> spec_problems;  // from parse_myresource; non-empty means InvalidSpec
  std::optional<DeploymentState> stable;   // the live "<name>" Deployment, if any
  std::string desired_spec_hash;           // hash of the desired stable Deployment ("" if not computed)
  // The canary step of this reconcile; nullopt when it was not evaluated (paused, invalid spec,
  // deleting): the Canary condition and canaryImage then stay as they are.
  std::optional<CanaryDecision> canary;
  std::optional<std::string> reconcile_error;  // a write or read that failed in this reconcile
  bool deleting = false;
  std::optional<std::string> cleanup_error;  // while deleting: why children could not be removed
};

// Starts from resource.status, so unchanged conditions keep their lastTransitionTime and conditions
// of other types (someone else's) are kept.
Status compute_status(const MyResource& resource, const StatusInputs& inputs, WallTime now);

// True when any field or condition differs (conditions compared as a set, keyed by type).
bool status_changed(const Status& current, const Status& desired);

// The status as JSON, into `out` (made an object). Empty strings are left out, so with server-side
// apply a field the operator no longer sets (canaryImage once the canary is gone) is removed.
void write_status_json(const Status& status, kube::JsonValue& out, kube::JsonAllocator& allocator);

// Body for a server-side apply of the status subresource:
// {"apiVersion","kind","metadata":{"name","namespace"},"status":{...}}.
kube::Object status_apply_body(const MyResource& resource, const Status& status);

}  // namespace myop::myresource
