#include "myresource/canary.h"

#include "base/time_format.h"
#include "myresource/image_reference.h"

namespace myop::myresource {
namespace {

Condition canary_condition(const MyResource& resource, ConditionStatus status, std::string_view reason,
                           std::string message) {
  Condition condition;
  condition.type = std::string(condition_type::kCanary);
  condition.status = status;
  condition.reason = std::string(reason);
  condition.message = std::move(message);
  condition.observed_generation = resource.metadata.generation;
  return condition;
}

// An event for every change of the Canary condition's status or reason (not for message updates
// such as replica counts), so each step is announced once.
void announce(CanaryDecision& decision, const MyResource& resource, std::string_view event_type) {
  const Condition* previous = find_condition(resource.status.conditions, condition_type::kCanary);
  if (!decision.condition) {
    if (previous != nullptr) {
      decision.event = CanaryEvent{"Normal", "CanaryRemoved",
                                   "spec.canary.enabled is not true (v1alpha1: annotation myorg.io/canary "
                                   "removed): canary Deployment " +
                                       deployment_name(resource.metadata.name, Track::Canary) + " removed"};
    }
    return;
  }
  if (previous != nullptr && previous->status == decision.condition->status &&
      previous->reason == decision.condition->reason) {
    return;
  }
  decision.event =
      CanaryEvent{std::string(event_type), decision.condition->reason, decision.condition->message};
}

// Nothing should run: delete a canary that exists.
CanaryDecision without_canary(CanaryPhase phase, const std::optional<DeploymentState>& canary) {
  CanaryDecision decision;
  decision.phase = phase;
  decision.action = canary ? CanaryAction::Delete : CanaryAction::None;
  return decision;
}

}  // namespace

std::string_view to_string(CanaryPhase phase) {
  switch (phase) {
    case CanaryPhase::NotRequested:
      return "NotRequested";
    case CanaryPhase::Disabled:
      return "Disabled";
    case CanaryPhase::InvalidTarget:
      return "InvalidTarget";
    case CanaryPhase::Running:
      return "Running";
    case CanaryPhase::Promoted:
      return "Promoted";
    case CanaryPhase::Failed:
      return "Failed";
  }
  return "Unknown";
}

CanaryDecision decide_canary(const MyResource& resource, const Features& features,
                             const std::optional<DeploymentState>& canary, WallTime now) {
  const std::string canary_name = deployment_name(resource.metadata.name, Track::Canary);
  const CanarySettings& settings = resource.spec.canary;
  if (!settings.enabled) {
    CanaryDecision decision = without_canary(CanaryPhase::NotRequested, canary);
    announce(decision, resource, "Normal");
    return decision;
  }

  if (!features.canary) {
    CanaryDecision decision = without_canary(CanaryPhase::Disabled, canary);
    decision.condition = canary_condition(resource, ConditionStatus::False, reason::kCanaryDisabled,
                                          "the canary feature is switched off (key canary in the operator's "
                                          "feature ConfigMap, or canary: false in spec.features, "
                                          "v1alpha1: canary=false in annotation myorg.io/features); "
                                          "no canary runs");
    announce(decision, resource, "Warning");
    return decision;
  }

  const std::string& target = settings.target_version;
  std::string target_problem;
  if (target.empty()) {
    target_problem =
        "spec.canary.enabled is true but spec.canary.targetVersion is missing (v1alpha1: annotation "
        "myorg.io/canary is \"true\" but myorg.io/targetVersion is missing): set it to the tag the "
        "canary should run";
  } else if (!is_valid_tag(target)) {
    target_problem =
        "spec.canary.targetVersion (v1alpha1: annotation myorg.io/targetVersion) \"" + target +
        "\" is not a valid image tag: use 1 to 128 letters, digits, '_', '.' or '-', not starting "
        "with '.' or '-' (e.g. 1.8.0)";
  } else if (target == "latest") {
    target_problem =
        "spec.canary.targetVersion (v1alpha1: annotation myorg.io/targetVersion) must not be "
        "\"latest\": a canary needs an immutable tag";
  }
  std::optional<ImageReference> stable = parse_image_reference(resource.spec.image);
  if (target_problem.empty() && !stable) {
    target_problem = "spec.image \"" + resource.spec.image + "\" is not a valid image reference";
  }
  if (!target_problem.empty()) {
    CanaryDecision decision = without_canary(CanaryPhase::InvalidTarget, canary);
    decision.condition =
        canary_condition(resource, ConditionStatus::False, reason::kInvalidSpec, std::move(target_problem));
    announce(decision, resource, "Warning");
    return decision;
  }

  if (stable->tag == target) {
    CanaryDecision decision = without_canary(CanaryPhase::Promoted, canary);
    decision.condition = canary_condition(resource, ConditionStatus::False, reason::kCanaryPromoted,
                                          "spec.image reached the target version " + target +
                                              ": the stable Deployment runs it and the canary is removed");
    announce(decision, resource, "Normal");
    return decision;
  }

  const std::string image = with_tag(*stable, target);
  const bool same_image = canary && canary->image == image;

  // The clock starts when a canary with this image is first planned and is kept on the canary
  // Deployment; a new target starts it again.
  WallTime started = now;
  if (same_image) {
    if (auto stored = base::parse_rfc3339(canary->canary_started_at)) {
      started = *stored;
    } else if (auto created = base::parse_rfc3339(canary->creation_timestamp)) {
      started = *created;
    }
  }
  const WallTime deadline = started + std::chrono::seconds(settings.progress_deadline_seconds);

  const bool available = same_image && canary->observed_generation >= canary->generation &&
                         canary->available_replicas >= settings.replicas &&
                         canary->updated_replicas >= settings.replicas;
  // Failed: the Deployment controller says its own deadline (set to ours) passed, or ours passed
  // with nothing available. Sticky: once reported as failed for this image, it stays failed while
  // scaled to 0, since the Deployment then looks "complete" to the Deployment controller.
  const Condition* previous = find_condition(resource.status.conditions, condition_type::kCanary);
  const bool reported_failed = previous != nullptr && previous->reason == reason::kCanaryFailed &&
                               same_image && canary->desired_replicas == 0;
  const bool native_deadline_exceeded =
      same_image && canary->observed_generation >= canary->generation && canary->progress_deadline_exceeded;
  const bool nothing_available = !same_image || canary->available_replicas == 0;
  const bool failed =
      reported_failed || (!available && (native_deadline_exceeded || (nothing_available && now >= deadline)));

  CanaryDecision decision;
  decision.action = CanaryAction::Apply;
  decision.plan = CanaryDeploymentPlan{image, settings.replicas, base::format_rfc3339(started)};
  if (failed) {
    decision.phase = CanaryPhase::Failed;
    decision.plan.replicas = 0;
    decision.condition =
        canary_condition(resource, ConditionStatus::False, reason::kCanaryFailed,
                         "canary " + canary_name + " (" + image + ") was not Available within " +
                             std::to_string(settings.progress_deadline_seconds) +
                             "s: scaled to 0, stable Deployment untouched; set another "
                             "spec.canary.targetVersion (v1alpha1: annotation myorg.io/targetVersion) "
                             "to retry, or spec.canary.enabled to false (v1alpha1: remove annotation "
                             "myorg.io/canary)");
    announce(decision, resource, "Warning");
    return decision;
  }

  decision.phase = CanaryPhase::Running;
  const std::int32_t available_replicas = same_image ? canary->available_replicas : 0;
  decision.condition = canary_condition(resource, ConditionStatus::True, reason::kCanaryRunning,
                                        "canary " + canary_name + " runs " + image + " (" +
                                            std::to_string(available_replicas) + "/" +
                                            std::to_string(settings.replicas) + " available)");
  if (!available && now < deadline) {
    // Round up so the look comes just after the deadline, not just before it.
    auto remaining = std::chrono::ceil<std::chrono::seconds>(deadline - now);
    decision.requeue_after = remaining + std::chrono::seconds(1);
  }
  announce(decision, resource, "Normal");
  return decision;
}

}  // namespace myop::myresource
