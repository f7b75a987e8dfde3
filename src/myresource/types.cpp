#include "myresource/types.h"

#include <algorithm>
#include <limits>

#include "kube/canonical_json.h"
#include "myresource/image_reference.h"

namespace myop::myresource {
namespace {

using kube::find_member;
using kube::JsonValue;

std::string string_of(const JsonValue& value) {
  return std::string(value.GetString(), value.GetStringLength());
}

// Reads an optional int32 member; records a problem when present but not an int32.
std::optional<std::int32_t> read_int32(const JsonValue& parent, std::string_view key, std::string_view field,
                                       std::vector<std::string>& problems) {
  const JsonValue* value = find_member(parent, key);
  if (value == nullptr || value->IsNull()) return std::nullopt;
  if (value->IsInt()) return value->GetInt();
  if (value->IsNumber()) {  // too large, or a fraction
    problems.push_back(std::string(field) + " must be a 32-bit integer");
    return std::nullopt;
  }
  problems.push_back(std::string(field) + " must be an integer");
  return std::nullopt;
}

std::optional<std::string> read_string(const JsonValue& parent, std::string_view key, std::string_view field,
                                       std::vector<std::string>& problems) {
  const JsonValue* value = find_member(parent, key);
  if (value == nullptr || value->IsNull()) return std::nullopt;
  if (!value->IsString()) {
    problems.push_back(std::string(field) + " must be a string");
    return std::nullopt;
  }
  return string_of(*value);
}

std::map<std::string, std::string> read_quantities(const JsonValue& parent, std::string_view key,
                                                   std::string_view field,
                                                   std::vector<std::string>& problems) {
  std::map<std::string, std::string> quantities;
  const JsonValue* value = find_member(parent, key);
  if (value == nullptr || value->IsNull()) return quantities;
  if (!value->IsObject()) {
    problems.push_back(std::string(field) + " must be a map of resource name to quantity");
    return quantities;
  }
  for (const auto& member : value->GetObject()) {
    std::string name = string_of(member.name);
    if (member.value.IsString()) {
      quantities[name] = string_of(member.value);
    } else if (member.value.IsInt64()) {
      quantities[name] = std::to_string(member.value.GetInt64());
    } else {
      problems.push_back(std::string(field) + "." + name + " must be a quantity such as 100m, 1 or 128Mi");
    }
  }
  return quantities;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::ranges::all_of(name, [](char character) {
    return (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
           (character >= '0' && character <= '9') || character == '_' || character == '-' || character == '.';
  });
}

void read_metadata(const JsonValue& object, Metadata& metadata) {
  kube::ObjectView view(object);
  metadata.name = std::string(view.name());
  metadata.namespace_name = std::string(view.namespace_name());
  metadata.uid = std::string(view.uid());
  metadata.resource_version = std::string(view.resource_version());
  metadata.generation = view.generation();
  metadata.labels = view.labels();
  metadata.annotations = view.annotations();
  for (std::string_view finalizer : view.finalizers()) metadata.finalizers.emplace_back(finalizer);
  if (auto deletion = view.deletion_timestamp()) metadata.deletion_timestamp = std::string(*deletion);
}

void read_spec(const JsonValue& spec_value, Spec& spec, std::vector<std::string>& problems) {
  if (auto image = read_string(spec_value, "image", "spec.image", problems)) spec.image = *image;
  if (auto replicas = read_int32(spec_value, "replicas", "spec.replicas", problems))
    spec.replicas = *replicas;
  spec.port = read_int32(spec_value, "port", "spec.port", problems);

  if (const JsonValue* env = find_member(spec_value, "env"); env != nullptr && !env->IsNull()) {
    if (!env->IsArray()) {
      problems.emplace_back("spec.env must be a list of {name, value}");
    } else {
      for (rapidjson::SizeType index = 0; index < env->Size(); ++index) {
        const JsonValue& item = (*env)[index];
        std::string field = "spec.env[" + std::to_string(index) + "]";
        if (!item.IsObject()) {
          problems.push_back(field + " must be an object with name and value");
          continue;
        }
        EnvVar variable;
        if (auto name = read_string(item, "name", field + ".name", problems)) variable.name = *name;
        if (auto value = read_string(item, "value", field + ".value", problems)) variable.value = *value;
        spec.env.push_back(std::move(variable));
      }
    }
  }

  if (const JsonValue* resources = find_member(spec_value, "resources");
      resources != nullptr && !resources->IsNull()) {
    if (!resources->IsObject()) {
      problems.emplace_back("spec.resources must be an object with requests and limits");
    } else {
      spec.resources.requests = read_quantities(*resources, "requests", "spec.resources.requests", problems);
      spec.resources.limits = read_quantities(*resources, "limits", "spec.resources.limits", problems);
    }
  }

  if (const JsonValue* paused = find_member(spec_value, "paused"); paused != nullptr && !paused->IsNull()) {
    if (paused->IsBool()) {
      spec.paused = paused->GetBool();
    } else {
      problems.emplace_back("spec.paused must be true or false");
    }
  }

  spec.progress_deadline_seconds =
      read_int32(spec_value, "progressDeadlineSeconds", "spec.progressDeadlineSeconds", problems);
  if (const JsonValue* automount = find_member(spec_value, "automountServiceAccountToken");
      automount != nullptr && !automount->IsNull()) {
    if (automount->IsBool()) {
      spec.automount_service_account_token = automount->GetBool();
    } else {
      problems.emplace_back("spec.automountServiceAccountToken must be true or false");
    }
  }

  if (const JsonValue* canary = find_member(spec_value, "canary"); canary != nullptr && !canary->IsNull()) {
    if (!canary->IsObject()) {
      problems.emplace_back("spec.canary must be an object with replicas and progressDeadlineSeconds");
    } else {
      if (const JsonValue* enabled = find_member(*canary, "enabled");
          enabled != nullptr && !enabled->IsNull()) {
        if (enabled->IsBool()) {
          spec.canary.enabled = enabled->GetBool();
        } else {
          problems.emplace_back("spec.canary.enabled must be true or false");
        }
      }
      if (auto target = read_string(*canary, "targetVersion", "spec.canary.targetVersion", problems)) {
        spec.canary.target_version = *target;
      }
      if (auto replicas = read_int32(*canary, "replicas", "spec.canary.replicas", problems)) {
        spec.canary.replicas = *replicas;
      }
      if (auto deadline = read_int32(*canary, "progressDeadlineSeconds",
                                     "spec.canary.progressDeadlineSeconds", problems)) {
        spec.canary.progress_deadline_seconds = *deadline;
      }
    }
  }
}

// spec.features: the overrides it sets. A bad member is a feature problem, not a spec problem: as
// with the v1alpha1 annotation, the object works with the valid part.
void read_features(const JsonValue& spec_value, FeatureOverrides& overrides,
                   std::vector<std::string>& problems) {
  const JsonValue* features = find_member(spec_value, "features");
  if (features == nullptr || features->IsNull()) return;
  if (!features->IsObject()) {
    problems.emplace_back("spec.features must be an object with canary, orphanSweep and orphanPolicy");
    return;
  }
  for (const auto& member : features->GetObject()) {
    const std::string name = string_of(member.name);
    const JsonValue& value = member.value;
    if (name == kCanaryFeature || name == kOrphanSweepFeature) {
      if (value.IsBool()) {
        (name == kCanaryFeature ? overrides.canary : overrides.orphan_sweep) = value.GetBool();
      } else {
        problems.push_back("spec.features." + name + " must be true or false");
      }
    } else if (name == kOrphanPolicyFeature) {
      if (value.IsString() && (value == "delete" || value == "report")) {
        overrides.orphan_policy = value == "delete" ? OrphanPolicy::Delete : OrphanPolicy::Report;
      } else {
        problems.emplace_back("spec.features.orphanPolicy must be delete or report");
      }
    } else {
      problems.push_back("spec.features: unknown feature flag \"" + name + "\"" +
                         std::string(kKnownFeatureFlags));
    }
  }
}

// The errors of the v1alpha1 myorg.io/features text a v1beta1 object was converted from, when the
// conversion kept that text (v1beta1 holds only its valid entries): what the v1alpha1 operator
// reported for it. None once the object was changed so that the text no longer applies.
std::vector<std::string> v1alpha1_feature_problems(const JsonValue& hub) {
  const kube::ObjectView view(hub);
  if (view.api_version() != kApiVersionV1beta1 || !view.annotation(kV1alpha1ValuesAnnotation)) return {};
  auto alpha = convert_myresource(hub, kApiVersionV1alpha1);
  if (!alpha) return {};
  auto text = alpha->view().annotation(kFeaturesAnnotation);
  if (!text) return {};
  return apply_feature_overrides(Features{}, *text).errors;
}

std::int64_t read_int64_or_zero(const JsonValue& parent, std::string_view key) {
  const JsonValue* value = find_member(parent, key);
  return value != nullptr && value->IsInt64() ? value->GetInt64() : 0;
}

// Status is written by the operator only; a malformed field reads as empty rather than as a problem.
void read_status(const JsonValue& status_value, Status& status) {
  status.observed_generation = read_int64_or_zero(status_value, "observedGeneration");
  auto text = [&](std::string_view key) {
    const JsonValue* value = find_member(status_value, key);
    return value != nullptr && value->IsString() ? string_of(*value) : std::string();
  };
  status.spec_hash = text("specHash");
  status.image = text("image");
  status.canary_image = text("canaryImage");
  status.replica_summary = text("replicaSummary");
  status.replicas = static_cast<std::int32_t>(read_int64_or_zero(status_value, "replicas"));
  status.ready_replicas = static_cast<std::int32_t>(read_int64_or_zero(status_value, "readyReplicas"));
  status.updated_replicas = static_cast<std::int32_t>(read_int64_or_zero(status_value, "updatedReplicas"));
  if (const JsonValue* conditions = find_member(status_value, "conditions");
      conditions != nullptr && conditions->IsArray()) {
    for (const JsonValue& item : conditions->GetArray()) {
      if (auto condition = parse_condition(item)) status.conditions.push_back(std::move(*condition));
    }
  }
}

}  // namespace

bool Metadata::has_finalizer(std::string_view finalizer) const {
  return std::ranges::find(finalizers, finalizer) != finalizers.end();
}

std::optional<std::string_view> Metadata::annotation(std::string_view key) const {
  auto found = annotations.find(key);
  if (found == annotations.end()) return std::nullopt;
  return std::string_view(found->second);
}

std::string ParsedMyResource::problem_message() const {
  std::string message;
  for (const std::string& problem : problems) {
    if (!message.empty()) message += "; ";
    message += problem;
  }
  return message;
}

std::optional<Condition> parse_condition(const kube::JsonValue& value) {
  if (!value.IsObject()) return std::nullopt;
  auto text = [&](std::string_view key) {
    const JsonValue* member = find_member(value, key);
    return member != nullptr && member->IsString() ? string_of(*member) : std::string();
  };
  Condition condition;
  condition.type = text("type");
  std::optional<ConditionStatus> status = parse_condition_status(text("status"));
  if (condition.type.empty() || !status) return std::nullopt;
  condition.status = *status;
  condition.reason = text("reason");
  condition.message = text("message");
  condition.last_transition_time = text("lastTransitionTime");
  condition.observed_generation = read_int64_or_zero(value, "observedGeneration");
  return condition;
}

std::vector<std::string> validate_spec(const Spec& spec) {
  std::vector<std::string> problems;
  if (spec.image.empty()) {
    problems.emplace_back("spec.image is required: set an image with a tag or digest, e.g. app:1.2.3");
  } else if (std::string problem = image_problem(spec.image); !problem.empty()) {
    problems.push_back(std::move(problem));
  }
  if (spec.replicas < 0 || spec.replicas > kMaximumReplicas) {
    problems.push_back("spec.replicas must be between 0 and 1000, not " + std::to_string(spec.replicas));
  }
  if (spec.port && (*spec.port < 1 || *spec.port > 65535)) {
    problems.push_back("spec.port must be a TCP port between 1 and 65535, not " + std::to_string(*spec.port));
  }
  std::map<std::string_view, int> seen_names;
  for (const EnvVar& variable : spec.env) {
    if (!is_env_name(variable.name)) {
      problems.push_back(
          "spec.env[].name \"" + variable.name +
          "\" must consist of letters, digits, '_', '-' or '.', and must not start with a digit");
    } else if (++seen_names[variable.name] == 2) {
      problems.push_back("spec.env has the name \"" + variable.name + "\" more than once");
    }
  }
  if (spec.canary.replicas < 1 || spec.canary.replicas > kMaximumReplicas) {
    problems.push_back("spec.canary.replicas must be between 1 and 1000, not " +
                       std::to_string(spec.canary.replicas));
  }
  if (spec.progress_deadline_seconds && (*spec.progress_deadline_seconds < 1 ||
                                         *spec.progress_deadline_seconds > kMaximumProgressDeadlineSeconds)) {
    problems.push_back("spec.progressDeadlineSeconds must be between 1 and 86400, not " +
                       std::to_string(*spec.progress_deadline_seconds));
  }
  if (spec.canary.progress_deadline_seconds < 1 ||
      spec.canary.progress_deadline_seconds > kMaximumProgressDeadlineSeconds) {
    problems.push_back("spec.canary.progressDeadlineSeconds must be between 1 and 86400, not " +
                       std::to_string(spec.canary.progress_deadline_seconds));
  }
  return problems;
}

ParsedMyResource parse_myresource(const kube::JsonValue& object) {
  ParsedMyResource parsed;
  if (!object.IsObject()) {
    parsed.problems.emplace_back("the object is not a JSON object");
    return parsed;
  }
  // v1alpha1 is read as its v1beta1 form. A v1alpha1 shape no API server stores (spec or spec.canary
  // not an object, ...) cannot be converted: it is read as it is, and its spec reports the problem.
  std::optional<kube::Object> hub;
  if (kube::ObjectView(object).api_version() == kApiVersionV1alpha1) {
    if (auto converted = convert_myresource(object, kApiVersionV1beta1)) hub = std::move(converted).value();
  }
  const JsonValue& hub_object = hub ? hub->json() : object;
  read_metadata(hub_object, parsed.resource.metadata);
  if (parsed.resource.metadata.name.size() > kMaximumNameLength) {
    parsed.problems.emplace_back(
        "metadata.name must be at most 63 characters: it is the value of labels on the "
        "Deployments");
  }
  const JsonValue* spec = find_member(hub_object, "spec");
  if (spec == nullptr || !spec->IsObject()) {
    parsed.problems.emplace_back("spec is required: set at least spec.image");
  } else {
    read_spec(*spec, parsed.resource.spec, parsed.problems);
    read_features(*spec, parsed.resource.spec.features, parsed.feature_problems);
    EffectiveCanary canary = effective_canary(hub_object);
    parsed.resource.spec.canary.enabled = canary.enabled;
    parsed.resource.spec.canary.target_version = canary.target.value_or("");
    parsed.ignored_annotations = std::move(canary.ignored);
    // The conversion moves a v1alpha1 object's myorg.io/features into spec.features: one still here was
    // written on the v1beta1 object, where it means nothing.
    if (auto features = parsed.resource.metadata.annotation(kFeaturesAnnotation)) {
      const JsonValue* field = find_member(*spec, "features");
      parsed.ignored_annotations.push_back(
          IgnoredAnnotation{std::string(kFeaturesAnnotation), std::string(*features), "spec.features",
                            field != nullptr ? kube::canonical_json(*field) : std::string("unset")});
    }
  }
  for (std::string& problem : v1alpha1_feature_problems(hub_object))
    parsed.feature_problems.push_back(std::move(problem));
  if (const JsonValue* status = find_member(hub_object, "status"); status != nullptr && status->IsObject()) {
    read_status(*status, parsed.resource.status);
  }
  for (std::string& problem : validate_spec(parsed.resource.spec))
    parsed.problems.push_back(std::move(problem));
  return parsed;
}

}  // namespace myop::myresource
