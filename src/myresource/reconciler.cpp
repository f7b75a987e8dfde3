#include "myresource/reconciler.h"

#include <optional>
#include <string>
#include <vector>

#include "myresource/canary.h"
#include "myresource/deployment_state.h"
#include "myresource/desired.h"
#include "myresource/owned_fields.h"
#include "myresource/status.h"
#include "myresource/types.h"

namespace myop::myresource {
namespace {

using runtime::ReconcileResult;

// The garbage collector's finalizer for a deletion with propagationPolicy Orphan.
constexpr std::string_view kOrphanDependentsFinalizer = "orphan";

EventSubject subject_of(const MyResource& resource) {
  return {std::string(kApiVersion), std::string(kKind),    resource.metadata.namespace_name,
          resource.metadata.name,   resource.metadata.uid, resource.metadata.resource_version};
}

// A child we may touch: controlled by this MyResource (by UID, so a same-named successor is safe).
bool controlled_by(const kube::Object& child, const MyResource& resource) {
  auto owner = child.view().controller_owner();
  return owner && owner->uid == resource.metadata.uid;
}

// May we adopt it? Our exact labels and no controller at all.
bool adoptable(const kube::Object& child, const MyResource& resource, Track track) {
  if (child.view().controller_owner()) return false;
  for (const auto& [key, value] : child_labels(resource.metadata.name, track)) {
    if (child.view().label(key) != value) return false;
  }
  return true;
}

// Events for changes of the Ready, Progressing and Degraded conditions (Canary has its own, from
// the canary decision).
void announce_condition_changes(Cluster& cluster, const MyResource& resource, const Status& before,
                                const Status& after) {
  for (std::string_view type : {condition_type::kReady, condition_type::kDegraded}) {
    const Condition* next = find_condition(after.conditions, type);
    if (next == nullptr) continue;
    const Condition* previous = find_condition(before.conditions, type);
    if (previous != nullptr && previous->status == next->status && previous->reason == next->reason) continue;
    bool warning = type == condition_type::kDegraded && next->status == ConditionStatus::True;
    if (type == condition_type::kDegraded && !warning && previous == nullptr) continue;  // nothing to say
    cluster.record_event(subject_of(resource), warning ? "Warning" : "Normal", next->reason,
                         warning ? "Degrade" : "Reconcile", next->message);
  }
}

class Pass {
 public:
  Pass(Cluster& cluster, const ReconcilerOptions& options, StaleDeploymentWaits& stale_waits,
       const runtime::ReconcileRequest& request, ParsedMyResource parsed, std::string resource_version)
      : cluster_(cluster),
        options_(options),
        stale_waits_(stale_waits),
        request_(request),
        parsed_(std::move(parsed)),
        resource_(parsed_.resource),
        resource_version_(std::move(resource_version)),
        now_(options.now()) {}

  ReconcileResult run() {
    if (resource_.metadata.deletion_timestamp) return finalize();
    if (!resource_.metadata.has_finalizer(kFinalizer)) {
      std::vector<std::string> finalizers = resource_.metadata.finalizers;
      finalizers.emplace_back(kFinalizer);
      auto added =
          cluster_.set_myresource_finalizers(resource_.metadata.namespace_name, resource_.metadata.name,
                                             finalizers, resource_version_, request_.stop);
      if (!added) return ReconcileResult::error("adding finalizer: " + added.error().to_string());
      // The write bumped resourceVersion and the cache holds the answer. The status apply below has
      // no precondition, but the cache takes its answer only when based on the version it holds:
      // based on the old one, the next reconcile would still see no status and write it again.
      if (ObjectPointer current =
              cluster_.get_myresource(resource_.metadata.namespace_name, resource_.metadata.name)) {
        resource_version_ = std::string(current->resource_version());
      }
    }

    if (!parsed_.valid()) {
      StatusInputs inputs;
      inputs.spec_problems = parsed_.problems;
      inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
      if (auto written = write_status(inputs); !written.empty()) return ReconcileResult::error(written);
      return ReconcileResult::terminal_error("invalid spec: " + parsed_.problem_message());
    }

    Features features = effective_features();
    StatusInputs inputs;
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
    kube::Object desired_stable = desired_stable_deployment(resource_);
    inputs.desired_spec_hash =
        std::string(desired_stable.view().annotation(kSpecHashAnnotation).value_or(""));

    if (resource_.spec.paused) {
      if (auto written = write_status(inputs); !written.empty()) return ReconcileResult::error(written);
      return ReconcileResult::done();
    }

    std::optional<std::string> error = converge(Track::Stable, desired_stable);
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));

    std::optional<runtime::Duration> requeue_after;
    if (!error) {
      std::string canary_name = deployment_name(resource_.metadata.name, Track::Canary);
      CanaryDecision canary = decide_canary(resource_, features, observe(canary_name), now_);
      if (canary.event) {
        cluster_.record_event(subject_of(resource_), canary.event->type, canary.event->reason, "Canary",
                              canary.event->message);
      }
      if (canary.action == CanaryAction::Apply) {
        error = converge(Track::Canary, desired_canary_deployment(resource_, canary.plan));
      } else if (canary.action == CanaryAction::Delete) {
        error = remove_child(canary_name);
      }
      if (canary.requeue_after) requeue_after = *canary.requeue_after;
      inputs.canary = std::move(canary);
    }
    inputs.reconcile_error = error;

    if (!error) {
      if (auto wait = wait_for_deployment_controller(inputs)) {
        return ReconcileResult::requeue_after(requeue_after ? std::min(*requeue_after, *wait) : *wait);
      }
    }
    if (auto written = write_status(inputs); !written.empty() && !error) error = written;
    if (error) return ReconcileResult::error(*error);
    if (requeue_after) return ReconcileResult::requeue_after(*requeue_after);
    return ReconcileResult::done();
  }

 private:
  ReconcileResult finalize() {
    if (!resource_.metadata.has_finalizer(kFinalizer)) return ReconcileResult::done();
    std::optional<std::string> cleanup_error;
    bool children_left = false;
    // `kubectl delete --cascade=orphan` (propagationPolicy Orphan) leaves the API server's "orphan"
    // finalizer on the object: the user keeps the children and the garbage collector takes their
    // owner references away. Deleting them here would override that request.
    const bool keep_children = resource_.metadata.has_finalizer(kOrphanDependentsFinalizer);
    for (Track track : {Track::Canary, Track::Stable}) {
      if (keep_children) break;
      std::string name = deployment_name(resource_.metadata.name, track);
      ObjectPointer child = cluster_.get_deployment(resource_.metadata.namespace_name, name);
      if (child == nullptr || !controlled_by(*child, resource_)) continue;
      children_left = true;
      if (child->view().is_being_deleted()) continue;  // already asked; wait for it
      if (auto error = remove_child(name)) cleanup_error = error;
    }
    StatusInputs inputs;
    inputs.deleting = true;
    inputs.cleanup_error = cleanup_error;
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
    if (cleanup_error) {
      write_status(inputs);
      return ReconcileResult::error("cleanup: " + *cleanup_error);
    }
    if (children_left) {
      write_status(inputs);
      return ReconcileResult::requeue_after(options_.deletion_poll);
    }
    std::vector<std::string> finalizers;
    for (const std::string& finalizer : resource_.metadata.finalizers) {
      if (finalizer != kFinalizer) finalizers.push_back(finalizer);
    }
    auto removed =
        cluster_.set_myresource_finalizers(resource_.metadata.namespace_name, resource_.metadata.name,
                                           finalizers, resource_version_, request_.stop);
    if (!removed && !kube::is_not_found(removed.error())) {
      return ReconcileResult::error("removing finalizer: " + removed.error().to_string());
    }
    return ReconcileResult::done();
  }

  Features effective_features() {
    Features base = cluster_.features();
    auto annotation = resource_.metadata.annotation(kFeaturesAnnotation);
    if (!annotation) return base;
    ParsedFeatures parsed = apply_feature_overrides(base, *annotation);
    // Shown as an event, not a condition: the object still works with the valid part.
    for (const std::string& problem : parsed.errors) {
      cluster_.record_event(subject_of(resource_), "Warning", "InvalidFeatureOverride", "Reconcile", problem);
    }
    return parsed.features;
  }

  std::optional<DeploymentState> observe(const std::string& name) {
    ObjectPointer live = cluster_.get_deployment(resource_.metadata.namespace_name, name);
    if (live == nullptr || !controlled_by(*live, resource_)) return std::nullopt;
    return observe_deployment(live->json());
  }

  // Applies `desired` unless the live child already holds every field we own.
  std::optional<std::string> converge(Track track, const kube::Object& desired) {
    std::string name = deployment_name(resource_.metadata.name, track);
    ObjectPointer live = cluster_.get_deployment(resource_.metadata.namespace_name, name);
    std::string based_on;
    if (live != nullptr) {
      if (!controlled_by(*live, resource_) && !adoptable(*live, resource_, track)) {
        return "Deployment " + name +
               " exists and is not controlled by this MyResource; delete or rename it so the operator can "
               "create its own";
      }
      if (owned_fields_match(desired.json(), live->json())) return std::nullopt;
      based_on = std::string(live->resource_version());
    }
    auto applied = cluster_.apply_deployment(desired, based_on, request_.stop);
    if (!applied) return "applying Deployment " + name + ": " + applied.error().to_string();
    return std::nullopt;
  }

  std::optional<std::string> remove_child(const std::string& name) {
    ObjectPointer live = cluster_.get_deployment(resource_.metadata.namespace_name, name);
    if (live == nullptr || !controlled_by(*live, resource_)) return std::nullopt;
    auto removed =
        cluster_.delete_deployment(resource_.metadata.namespace_name, name, live->uid(), request_.stop);
    if (!removed && !kube::is_not_found(removed.error())) {
      return "deleting Deployment " + name + ": " + removed.error().to_string();
    }
    return std::nullopt;
  }

  std::string key() const { return resource_.metadata.namespace_name + "/" + resource_.metadata.name; }

  // A status write to hold back, and for how long: the stable Deployment's controller has not yet
  // observed its latest spec (we just applied it, or an earlier pass did), so the replica counts and
  // messages the status would copy are superseded by the Deployment event that is on its way, which
  // brings the next reconcile. The wait is bounded, so a stalled controller still gets an honest
  // status (counts as they are); errors are never held back (the caller checks).
  std::optional<runtime::Duration> wait_for_deployment_controller(const StatusInputs& inputs) {
    const std::optional<DeploymentState>& stable = inputs.stable;
    if (!stable || stable->observed_generation >= stable->generation ||
        !status_changed(resource_.status, compute_status(resource_, inputs, now_))) {
      stale_waits_.forget(key());
      return std::nullopt;
    }
    auto remaining =
        stale_waits_.remaining(key(), stable->uid, stable->generation, now_, options_.stale_deployment_wait);
    if (!remaining) stale_waits_.forget(key());
    return remaining;
  }

  // Writes the status when it changed; returns an error message or "".
  std::string write_status(const StatusInputs& inputs) {
    Status desired = compute_status(resource_, inputs, now_);
    if (!status_changed(resource_.status, desired)) return "";
    auto written = cluster_.apply_myresource_status(status_apply_body(resource_, desired), resource_version_,
                                                    request_.stop);
    if (!written) return "writing status: " + written.error().to_string();
    announce_condition_changes(cluster_, resource_, resource_.status, desired);
    return "";
  }

  Cluster& cluster_;
  const ReconcilerOptions& options_;
  StaleDeploymentWaits& stale_waits_;
  const runtime::ReconcileRequest& request_;
  ParsedMyResource parsed_;
  const MyResource& resource_;
  std::string resource_version_;
  WallTime now_;
};

}  // namespace

std::optional<runtime::Duration> StaleDeploymentWaits::remaining(const std::string& key,
                                                                 const std::string& uid,
                                                                 std::int64_t generation, WallTime now,
                                                                 runtime::Duration limit) {
  std::lock_guard lock(mutex_);
  auto [position, inserted] = waits_.try_emplace(key);
  Wait& wait = position->second;
  if (inserted || wait.uid != uid || wait.generation != generation) wait = {uid, generation, now};
  const auto waited = std::chrono::duration_cast<runtime::Duration>(now - wait.since);
  if (waited >= limit) return std::nullopt;
  return limit - waited;
}

void StaleDeploymentWaits::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  waits_.erase(key);
}

std::size_t StaleDeploymentWaits::size() const {
  std::lock_guard lock(mutex_);
  return waits_.size();
}

MyResourceReconciler::MyResourceReconciler(std::shared_ptr<Cluster> cluster, ReconcilerOptions options)
    : cluster_(std::move(cluster)), options_(std::move(options)) {}

runtime::ReconcileResult MyResourceReconciler::reconcile(const runtime::ReconcileRequest& request) {
  ObjectPointer object = cluster_->get_myresource(request.key.namespace_name, request.key.name);
  if (object == nullptr) {
    stale_waits_.forget(request.key.namespace_name + "/" + request.key.name);
    return ReconcileResult::done();
  }
  Pass pass(*cluster_, options_, stale_waits_, request, parse_myresource(object->json()),
            std::string(object->resource_version()));
  return pass.run();
}

}  // namespace myop::myresource
