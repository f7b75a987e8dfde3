#include "myresource/status.h"

#include "kube/object.h"

namespace myop::myresource {
namespace {

using kube::JsonAllocator;
using kube::JsonValue;

Condition make_condition(std::string_view type, ConditionStatus status, std::string_view reason,
                         std::string message, std::int64_t generation) {
  Condition condition;
  condition.type = std::string(type);
  condition.status = status;
  condition.reason = std::string(reason);
  condition.message = std::move(message);
  condition.observed_generation = generation;
  return condition;
}

std::string counts(const DeploymentState& stable, std::int32_t desired) {
  return std::to_string(stable.updated_replicas) + "/" + std::to_string(desired) + " updated, " +
         std::to_string(stable.available_replicas) + "/" + std::to_string(desired) + " available";
}

}  // namespace

Status compute_status(const MyResource& resource, const StatusInputs& inputs, WallTime now) {
  const std::int64_t generation = resource.metadata.generation;
  const std::int32_t desired_replicas = resource.spec.replicas;
  const std::string name = deployment_name(resource.metadata.name, Track::Stable);
  Status status = resource.status;
  status.observed_generation = generation;

  const std::optional<DeploymentState>& stable = inputs.stable;
  status.spec_hash = stable ? stable->spec_hash : "";
  status.image = stable ? stable->image : "";
  status.replicas = stable ? stable->replicas : 0;
  status.ready_replicas = stable ? stable->ready_replicas : 0;
  status.updated_replicas = stable ? stable->updated_replicas : 0;
  status.replica_summary = std::to_string(status.ready_replicas) + "/" + std::to_string(desired_replicas);

  // Does the live stable Deployment run the desired spec, fully rolled out?
  const bool up_to_date = stable && !inputs.desired_spec_hash.empty() &&
                          stable->spec_hash == inputs.desired_spec_hash && stable->rolled_out();
  const bool serving = stable && stable->rolled_out();

  auto set = [&](std::string_view type, ConditionStatus condition_status, std::string_view reason,
                 std::string message) {
    set_condition(status.conditions,
                  make_condition(type, condition_status, reason, std::move(message), generation), now);
  };
  const std::string degraded_none = "no problems found";

  if (inputs.deleting) {
    set(condition_type::kReady, ConditionStatus::False, reason::kDeleting,
        "being deleted: removing its Deployments before the finalizer is released");
    set(condition_type::kProgressing, ConditionStatus::True, reason::kDeleting, "removing Deployments");
    if (inputs.cleanup_error) {
      set(condition_type::kDegraded, ConditionStatus::True, reason::kCleanupFailed,
          "cleanup failed, retrying with backoff: " + *inputs.cleanup_error);
    } else {
      set(condition_type::kDegraded, ConditionStatus::False, reason::kAsExpected, degraded_none);
    }
    return status;
  }

  if (!inputs.spec_problems.empty()) {
    std::string problems;
    for (const std::string& problem : inputs.spec_problems)
      problems += (problems.empty() ? "" : "; ") + problem;
    set(condition_type::kDegraded, ConditionStatus::True, reason::kInvalidSpec,
        problems + ". Nothing is changed until the spec is fixed.");
    set(condition_type::kProgressing, ConditionStatus::False, reason::kInvalidSpec,
        "the spec is invalid: see condition Degraded");
    if (serving) {
      set(condition_type::kReady, ConditionStatus::True, reason::kAvailable,
          "Deployment " + name + " is available, running the last valid spec");
    } else {
      set(condition_type::kReady, ConditionStatus::False, reason::kInvalidSpec,
          "the spec is invalid: see condition Degraded");
    }
    return status;
  }

  if (resource.spec.paused) {
    set(condition_type::kProgressing, ConditionStatus::False, reason::kPaused,
        "spec.paused is true: the operator changes nothing until it is set to false");
    if (serving) {
      set(condition_type::kReady, ConditionStatus::True, reason::kAvailable,
          "Deployment " + name + " is available (paused: changes to the spec are not applied)");
    } else {
      set(condition_type::kReady, ConditionStatus::False, reason::kPaused,
          stable ? "Deployment " + name + " is not fully available (" +
                       counts(*stable, stable->desired_replicas) + ") and the MyResource is paused"
                 : "paused before Deployment " + name + " was created");
    }
  } else if (up_to_date) {
    set(condition_type::kReady, ConditionStatus::True, reason::kAvailable,
        "Deployment " + name + " runs " + stable->image + " with " +
            std::to_string(stable->available_replicas) + "/" + std::to_string(desired_replicas) +
            " replicas available");
    set(condition_type::kProgressing, ConditionStatus::False, reason::kAvailable, "rollout complete");
  } else {
    std::string message =
        stable ? "waiting for Deployment " + name + " to roll out: " + counts(*stable, desired_replicas)
               : "creating Deployment " + name;
    set(condition_type::kReady, ConditionStatus::False, reason::kRollingOut, message);
    set(condition_type::kProgressing, ConditionStatus::True, reason::kRollingOut, message);
  }

  if (inputs.reconcile_error) {
    set(condition_type::kDegraded, ConditionStatus::True, reason::kReconcileError,
        "reconcile failed, retrying with backoff: " + *inputs.reconcile_error);
  } else if (stable && stable->progress_deadline_exceeded &&
             stable->observed_generation >= stable->generation && !resource.spec.paused) {
    set(condition_type::kDegraded, ConditionStatus::True, reason::kProgressDeadlineExceeded,
        "Deployment " + name +
            " stopped making progress (ProgressDeadlineExceeded): check its pods with "
            "`kubectl describe deployment " +
            name + "`");
  } else {
    set(condition_type::kDegraded, ConditionStatus::False, reason::kAsExpected, degraded_none);
  }

  if (inputs.canary) {
    if (inputs.canary->condition) {
      set_condition(status.conditions, *inputs.canary->condition, now);
    } else {
      remove_condition(status.conditions, condition_type::kCanary);
    }
    status.canary_image = inputs.canary->phase == CanaryPhase::Running ? inputs.canary->plan.image : "";
  }
  return status;
}

bool status_changed(const Status& current, const Status& desired) {
  return current.observed_generation != desired.observed_generation ||
         current.spec_hash != desired.spec_hash || current.image != desired.image ||
         current.canary_image != desired.canary_image || current.replicas != desired.replicas ||
         current.ready_replicas != desired.ready_replicas ||
         current.updated_replicas != desired.updated_replicas ||
         current.replica_summary != desired.replica_summary ||
         !same_conditions(current.conditions, desired.conditions);
}

void write_status_json(const Status& status, kube::JsonValue& out, kube::JsonAllocator& allocator) {
  out.SetObject();
  auto add_text = [&](JsonValue& parent, std::string_view key, std::string_view value) {
    if (!value.empty())
      parent.AddMember(kube::json_string(key, allocator), kube::json_string(value, allocator), allocator);
  };
  out.AddMember("observedGeneration", JsonValue(static_cast<int64_t>(status.observed_generation)), allocator);
  add_text(out, "specHash", status.spec_hash);
  add_text(out, "image", status.image);
  add_text(out, "canaryImage", status.canary_image);
  out.AddMember("replicas", JsonValue(status.replicas), allocator);
  out.AddMember("readyReplicas", JsonValue(status.ready_replicas), allocator);
  out.AddMember("updatedReplicas", JsonValue(status.updated_replicas), allocator);
  add_text(out, "replicaSummary", status.replica_summary);
  JsonValue conditions(rapidjson::kArrayType);
  for (const Condition& condition : status.conditions) {
    JsonValue item(rapidjson::kObjectType);
    add_text(item, "type", condition.type);
    add_text(item, "status", to_string(condition.status));
    item.AddMember("observedGeneration", JsonValue(static_cast<int64_t>(condition.observed_generation)),
                   allocator);
    add_text(item, "lastTransitionTime", condition.last_transition_time);
    add_text(item, "reason", condition.reason);
    // message is required by the schema even when empty.
    item.AddMember("message", kube::json_string(condition.message, allocator), allocator);
    conditions.PushBack(item, allocator);
  }
  out.AddMember("conditions", conditions, allocator);
}

kube::Object status_apply_body(const MyResource& resource, const Status& status) {
  kube::Object body(4096);
  JsonAllocator& allocator = body.allocator();
  JsonValue& root = body.json();
  root.AddMember("apiVersion", kube::json_string(kApiVersion, allocator), allocator);
  root.AddMember("kind", kube::json_string(kKind, allocator), allocator);
  JsonValue metadata(rapidjson::kObjectType);
  metadata.AddMember("name", kube::json_string(resource.metadata.name, allocator), allocator);
  metadata.AddMember("namespace", kube::json_string(resource.metadata.namespace_name, allocator), allocator);
  root.AddMember("metadata", metadata, allocator);
  JsonValue status_value;
  write_status_json(status, status_value, allocator);
  root.AddMember("status", status_value, allocator);
  return body;
}

}  // namespace myop::myresource
