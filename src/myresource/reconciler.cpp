#include "myresource/reconciler.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "myresource/canary.h"
#include "myresource/deployment_state.h"
#include "myresource/desired.h"
#include "myresource/owned_fields.h"
#include "myresource/status.h"
#include "myresource/types.h"
#include "runtime/controller/finalizer.h"
#include "runtime/logging.h"

namespace myop::myresource {
namespace {

using runtime::ReconcileResult;

// The sooner of two waits, the first of which may be none.
runtime::Duration sooner(const std::optional<runtime::Duration>& wait, runtime::Duration other) {
  return wait ? std::min(*wait, other) : other;
}

EventSubject subject_of(const MyResource& resource) {
  return {std::string(kApiVersion), std::string(kKind),    resource.metadata.namespace_name,
          resource.metadata.name,   resource.metadata.uid, resource.metadata.resource_version};
}

// A child we may touch: controlled by this MyResource (by UID, so a same-named successor is safe).
// The owner reference's apiVersion is not compared: a child of the previous release names
// myorg.io/v1alpha1 and is ours all the same (as for controller-runtime, which matches group and kind).
bool controlled_by(const kube::Object& child, const MyResource& resource) {
  auto owner = child.view().controller_owner();
  return owner && owner->uid == resource.metadata.uid;
}

// May we adopt it? Our exact labels and no controller at all.
bool adoptable(const kube::Object& child, const MyResource& resource, Track track) {
  if (child.view().controller_owner()) return false;
  return std::ranges::all_of(child_labels(resource.metadata.name, track), [&](const auto& label) {
    return child.view().label(label.first) == label.second;
  });
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

// Why a step failed: what the reconciler was doing, and the API's error when it came from the API
// (kept typed up to the controller, which treats a 409 differently from a real failure).
struct Failure {
  std::string context;
  std::optional<kube::Error> error;

  std::string message() const { return error ? context + ": " + error->to_string() : context; }
  ReconcileResult result() const {
    return error ? ReconcileResult::error(*error, context) : ReconcileResult::error(context);
  }
};

// One reconcile of one MyResource, as of the object it was given (the finalizer helper hands over
// the object its own write returned, so the resourceVersion is current without a second read).
class Pass {
 public:
  Pass(Cluster& cluster, const ReconcilerOptions& options, StaleDeploymentWaits& stale_waits,
       const runtime::ReconcileRequest& request, const ObjectPointer& object)
      : cluster_(cluster),
        options_(options),
        stale_waits_(stale_waits),
        request_(request),
        parsed_(parse_myresource(object->json())),
        resource_(parsed_.resource),
        now_(options.clock->wall_now()) {}

  ReconcileResult apply() {
    if (!parsed_.valid()) {
      StatusInputs inputs;
      inputs.spec_problems = parsed_.problems;
      inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
      if (auto failed = write_status(inputs)) return failed->result();
      return ReconcileResult::terminal_error("invalid spec: " + parsed_.problem_message());
    }

    Features features = effective_features();
    report_ignored_annotations();
    StatusInputs inputs;
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
    kube::Object desired_stable = desired_stable_deployment(resource_);
    inputs.desired_spec_hash =
        std::string(desired_stable.view().annotation(kSpecHashAnnotation).value_or(""));

    if (resource_.spec.paused) {
      if (auto failed = write_status(inputs)) return failed->result();
      return ReconcileResult::done();
    }

    std::optional<Failure> failure = converge(Track::Stable, desired_stable);
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));

    std::optional<runtime::Duration> requeue_after;
    if (!failure) {
      std::string canary_name = deployment_name(resource_.metadata.name, Track::Canary);
      ObjectPointer live_canary = cluster_.get_deployment(resource_.metadata.namespace_name, canary_name);
      CanaryDecision canary = decide_canary(resource_, features, observe(live_canary), now_);
      if (canary.event) {
        cluster_.record_event(subject_of(resource_), canary.event->type, canary.event->reason, "Canary",
                              canary.event->message);
      }
      if (canary.requeue_after) requeue_after = *canary.requeue_after;
      if (canary.action == CanaryAction::Apply) {
        failure = converge(Track::Canary, desired_canary_deployment(resource_, canary.plan));
      } else if (canary.action == CanaryAction::Delete) {
        Removal removal = remove_child(canary_name, live_canary);
        failure = std::move(removal.failure);
        if (removal.recheck_after) requeue_after = sooner(requeue_after, *removal.recheck_after);
      }
      inputs.canary = std::move(canary);
    }
    if (failure) inputs.reconcile_error = failure->message();

    if (!failure) {
      if (auto wait = wait_for_deployment_controller(inputs)) {
        return ReconcileResult::requeue_after(sooner(requeue_after, *wait));
      }
    }
    std::optional<Failure> status_failure = write_status(inputs);
    if (failure) return failure->result();
    if (status_failure) return status_failure->result();
    if (requeue_after) return ReconcileResult::requeue_after(*requeue_after);
    return ReconcileResult::done();
  }

  // Deletion: the children are removed (foreground, so they are gone only after their pods) and
  // waited for; the finalizer helper drops the finalizer once this returns done. Kept children
  // (propagationPolicy Orphan) are left to the garbage collector, which takes their owner
  // references away.
  ReconcileResult cleanup(runtime::DependentsPolicy policy) {
    std::optional<Failure> cleanup_failure;
    std::optional<runtime::Duration> recheck_after;
    bool children_left = false;
    for (Track track : {Track::Canary, Track::Stable}) {
      if (policy == runtime::DependentsPolicy::keep) break;
      std::string name = deployment_name(resource_.metadata.name, track);
      ObjectPointer child = cluster_.get_deployment(resource_.metadata.namespace_name, name);
      if (child == nullptr || !controlled_by(*child, resource_)) continue;
      children_left = true;
      Removal removal = remove_child(name, child);
      if (removal.failure) cleanup_failure = std::move(removal.failure);
      if (removal.recheck_after) recheck_after = sooner(recheck_after, *removal.recheck_after);
    }
    if (!cleanup_failure && !children_left) return ReconcileResult::done();
    StatusInputs inputs;
    inputs.deleting = true;
    if (cleanup_failure) inputs.cleanup_error = cleanup_failure->message();
    inputs.stable = observe(deployment_name(resource_.metadata.name, Track::Stable));
    std::optional<Failure> status_failure = write_status(inputs);
    if (cleanup_failure) {
      // The cleanup error decides the retry; a status that could not say so is part of the message.
      Failure failure = *cleanup_failure;
      failure.context = "cleanup: " + failure.context;
      if (status_failure)
        failure.context += " (and the status could not be written: " + status_failure->message() + ")";
      return failure.result();
    }
    if (status_failure) return status_failure->result();
    // The children are watched (owns), so their deletion events, at high priority, bring the next
    // pass, which finds them gone and lets the finalizer go. The only timer: when a foreground
    // deletion would count as stuck, should no event come before.
    if (recheck_after) return ReconcileResult::requeue_after(*recheck_after);
    return ReconcileResult::waiting();
  }

 private:
  Features effective_features() {
    // Shown as an event, not a condition: the object still works with the valid part.
    for (const std::string& problem : parsed_.feature_problems) {
      cluster_.record_event(subject_of(resource_), "Warning", "InvalidFeatureOverride", "Reconcile", problem);
    }
    return with_overrides(cluster_.features(), resource_.spec.features);
  }

  // A canary annotation that spec.canary overrides does nothing: say so where the user looks (the
  // admission policy warned on the write already, if it is installed).
  void report_ignored_annotations() {
    for (const IgnoredAnnotation& ignored : parsed_.ignored_annotations) {
      cluster_.record_event(subject_of(resource_), "Warning", "AnnotationIgnored", "Reconcile",
                            ignored.message());
    }
  }

  std::optional<DeploymentState> observe(const std::string& name) {
    return observe(cluster_.get_deployment(resource_.metadata.namespace_name, name));
  }
  std::optional<DeploymentState> observe(const ObjectPointer& live) {
    if (live == nullptr || !controlled_by(*live, resource_)) return std::nullopt;
    return observe_deployment(live->json());
  }

  // Applies `desired` unless the live child already holds every field we own.
  std::optional<Failure> converge(Track track, const kube::Object& desired) {
    std::string name = deployment_name(resource_.metadata.name, track);
    ObjectPointer live = cluster_.get_deployment(resource_.metadata.namespace_name, name);
    if (live != nullptr) {
      if (!controlled_by(*live, resource_) && !adoptable(*live, resource_, track)) {
        return Failure{
            "Deployment " + name +
                " exists and is not controlled by this MyResource; delete or rename it so the operator "
                "can create its own",
            std::nullopt};
      }
      if (owned_fields_match(desired.json(), live->json())) return std::nullopt;
    }
    auto applied = cluster_.apply_deployment(desired, request_.stop);
    if (!applied) return Failure{"applying Deployment " + name, std::move(applied).error()};
    return std::nullopt;
  }

  // What asking for a child's removal came to: an error, or when to look again (a foreground deletion
  // that would count as stuck then).
  struct Removal {
    std::optional<Failure> failure;
    std::optional<runtime::Duration> recheck_after;
  };

  // Deletes the child in the foreground (gone only after its pods), once: a child already being
  // deleted is waited for. If the garbage collector never finishes that deletion (it can miss it for
  // good, foreground_deletion_time_left), the child is deleted again in background, which drops the
  // foregroundDeletion finalizer: the Deployment goes at once, its ReplicaSets and pods follow when
  // the garbage collector gets to them. `live`: the child `name` as the cache has it.
  Removal remove_child(const std::string& name, const ObjectPointer& live) {
    if (live == nullptr || !controlled_by(*live, resource_)) return {};
    Propagation propagation = Propagation::foreground;
    if (live->view().is_being_deleted()) {
      auto left = foreground_deletion_time_left(live->json(), now_, options_.stuck_deletion_timeout);
      if (!left) return {};  // another finalizer holds it: its owner's to drop, an event brings us back
      if (left->count() > 0) return {std::nullopt, *left};
      propagation = Propagation::background;
      const std::string deleted_at(live->view().deletion_timestamp().value_or(""));
      runtime::log(spdlog::level::warn,
                   "Deployment stuck in foreground deletion: the garbage collector is not finishing it; "
                   "deleting it again in background",
                   {{"namespace", resource_.metadata.namespace_name},
                    {"name", resource_.metadata.name},
                    {"deployment", name},
                    {"deletionTimestamp", deleted_at}});
      cluster_.record_event(
          subject_of(resource_), "Warning", "ForegroundDeletionStuck", "Delete",
          "Deployment " + name + " has been in foreground deletion since " + deleted_at +
              ", longer than its pods' grace period plus the stuck-deletion timeout: the garbage "
              "collector is not finishing it. Deleted again in background; its ReplicaSets and pods go "
              "when the garbage collector gets to them");
    }
    auto removed = cluster_.delete_deployment(resource_.metadata.namespace_name, name, live->uid(),
                                              propagation, request_.stop);
    if (!removed && !kube::is_not_found(removed.error())) {
      return {Failure{"deleting Deployment " + name, std::move(removed).error()}, std::nullopt};
    }
    return {};
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

  // Writes the status when it changed. A failure must be handled: it is the reconcile's result
  // unless a failure that came first decides it.
  [[nodiscard]] std::optional<Failure> write_status(const StatusInputs& inputs) {
    Status desired = compute_status(resource_, inputs, now_);
    if (!status_changed(resource_.status, desired)) return std::nullopt;
    auto written = cluster_.apply_myresource_status(status_apply_body(resource_, desired), request_.stop);
    if (!written) return Failure{"writing status", std::move(written).error()};
    announce_condition_changes(cluster_, resource_, resource_.status, desired);
    return std::nullopt;
  }

  Cluster& cluster_;
  const ReconcilerOptions& options_;
  StaleDeploymentWaits& stale_waits_;
  const runtime::ReconcileRequest& request_;
  ParsedMyResource parsed_;
  const MyResource& resource_;
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
  const runtime::SetFinalizers set_finalizers = [&](const kube::Object& current,
                                                    const std::vector<std::string>& finalizers) {
    return cluster_->set_myresource_finalizers(current, finalizers, request.stop);
  };
  runtime::FinalizerSteps steps;
  steps.apply = [&](const ObjectPointer& current) {
    return Pass(*cluster_, options_, stale_waits_, request, current).apply();
  };
  steps.cleanup = [&](const ObjectPointer& current, runtime::DependentsPolicy policy) {
    return Pass(*cluster_, options_, stale_waits_, request, current).cleanup(policy);
  };
  return runtime::reconcile_with_finalizer(object, kFinalizer, set_finalizers, steps);
}

}  // namespace myop::myresource
