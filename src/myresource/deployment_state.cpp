#include "myresource/deployment_state.h"

#include "base/time_format.h"
#include "myresource/desired.h"

namespace myop::myresource {
namespace {

using kube::find_member;
using kube::JsonValue;

std::int64_t integer_at(const kube::ObjectView& view, std::initializer_list<std::string_view> path,
                        std::int64_t fallback) {
  const JsonValue* value = view.find(path);
  return value != nullptr && value->IsInt64() ? value->GetInt64() : fallback;
}

std::string text_of(const JsonValue* value) {
  return value != nullptr && value->IsString() ? std::string(value->GetString(), value->GetStringLength())
                                               : std::string();
}

}  // namespace

bool DeploymentState::rolled_out() const {
  return observed_generation >= generation && updated_replicas >= desired_replicas &&
         available_replicas >= desired_replicas && replicas <= desired_replicas;
}

DeploymentState observe_deployment(const kube::JsonValue& deployment) {
  kube::ObjectView view(deployment);
  DeploymentState state;
  state.name = std::string(view.name());
  state.uid = std::string(view.uid());
  state.creation_timestamp = std::string(view.creation_timestamp());
  state.generation = view.generation();
  state.observed_generation = integer_at(view, {"status", "observedGeneration"}, 0);
  state.desired_replicas = static_cast<std::int32_t>(integer_at(view, {"spec", "replicas"}, 1));
  state.replicas = static_cast<std::int32_t>(integer_at(view, {"status", "replicas"}, 0));
  state.ready_replicas = static_cast<std::int32_t>(integer_at(view, {"status", "readyReplicas"}, 0));
  state.updated_replicas = static_cast<std::int32_t>(integer_at(view, {"status", "updatedReplicas"}, 0));
  state.available_replicas = static_cast<std::int32_t>(integer_at(view, {"status", "availableReplicas"}, 0));
  state.spec_hash = std::string(view.annotation(kSpecHashAnnotation).value_or(""));
  state.canary_started_at = std::string(view.annotation(kCanaryStartedAtAnnotation).value_or(""));

  if (const JsonValue* containers = view.find({"spec", "template", "spec", "containers"});
      containers != nullptr && containers->IsArray() && !containers->Empty()) {
    const JsonValue* chosen = &(*containers)[0];
    for (const JsonValue& container : containers->GetArray()) {
      if (text_of(find_member(container, "name")) == kContainerName) chosen = &container;
    }
    state.image = text_of(find_member(*chosen, "image"));
  }
  if (const JsonValue* conditions = view.find({"status", "conditions"});
      conditions != nullptr && conditions->IsArray()) {
    for (const JsonValue& condition : conditions->GetArray()) {
      if (text_of(find_member(condition, "type")) == "Progressing" &&
          text_of(find_member(condition, "status")) == "False" &&
          text_of(find_member(condition, "reason")) == "ProgressDeadlineExceeded") {
        state.progress_deadline_exceeded = true;
      }
    }
  }
  return state;
}

std::optional<std::chrono::milliseconds> foreground_deletion_time_left(
    const kube::JsonValue& deployment, std::chrono::system_clock::time_point now,
    std::chrono::milliseconds slack) {
  kube::ObjectView view(deployment);
  std::optional<std::string_view> deleted_at = view.deletion_timestamp();
  if (!deleted_at || !view.has_finalizer(kForegroundDeletionFinalizer)) return std::nullopt;
  std::optional<base::WallTime> since = base::parse_rfc3339(*deleted_at);
  if (!since) return std::nullopt;
  const std::chrono::seconds grace(
      integer_at(view, {"spec", "template", "spec", "terminationGracePeriodSeconds"}, 30));
  return std::chrono::duration_cast<std::chrono::milliseconds>(*since + grace + slack - now);
}

}  // namespace myop::myresource
