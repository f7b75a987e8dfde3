#include "myresource/effective_canary.h"

#include "kube/canonical_json.h"
#include "myresource/types.h"

namespace myop::myresource {
namespace {

using kube::JsonValue;

// spec.canary.<name> when it is set: present and not null.
const JsonValue* spec_canary_field(const JsonValue& object, std::string_view name) {
  const JsonValue* spec = kube::find_member(object, "spec");
  if (spec == nullptr || !spec->IsObject()) return nullptr;
  const JsonValue* canary = kube::find_member(*spec, "canary");
  if (canary == nullptr || !canary->IsObject()) return nullptr;
  const JsonValue* field = kube::find_member(*canary, name);
  return field == nullptr || field->IsNull() ? nullptr : field;
}

std::optional<std::string> annotation_of(const JsonValue& object, std::string_view key) {
  const JsonValue* metadata = kube::find_member(object, "metadata");
  if (metadata == nullptr || !metadata->IsObject()) return std::nullopt;
  const JsonValue* annotations = kube::find_member(*metadata, "annotations");
  if (annotations == nullptr || !annotations->IsObject()) return std::nullopt;
  const JsonValue* value = kube::find_member(*annotations, key);
  if (value == nullptr || !value->IsString()) return std::nullopt;
  return std::string(value->GetString(), value->GetStringLength());
}

}  // namespace

std::string IgnoredAnnotation::message() const {
  if (annotation == kFeaturesAnnotation) {
    return "annotation " + annotation + " \"" + value + "\" is ignored: it means nothing on " +
           std::string(kApiVersionV1beta1) + ", where " + field + " is the only form (now " + field_value +
           "); remove the annotation, and set " + field + " instead";
  }
  return "annotation " + annotation + " \"" + value + "\" is ignored: " + field + " is " + field_value +
         ", and spec.canary wins over the annotations; remove the annotation, or change " + field;
}

EffectiveCanary effective_canary(const JsonValue& object) {
  EffectiveCanary effective;
  if (!object.IsObject()) return effective;
  const bool alpha = kube::ObjectView(object).api_version() == kApiVersionV1alpha1;

  const std::optional<std::string> canary_annotation = annotation_of(object, kCanaryAnnotation);
  // v1alpha1 knows no spec.canary.enabled: a member of that name is an unknown field, not a setting.
  const JsonValue* enabled = alpha ? nullptr : spec_canary_field(object, "enabled");
  if (enabled != nullptr) {
    effective.enabled = enabled->IsTrue();
    effective.enabled_source = CanarySource::Spec;
    // Anything but exactly "true" runs no canary, as in v1alpha1.
    if (canary_annotation && (*canary_annotation == "true") != effective.enabled) {
      effective.ignored.push_back(IgnoredAnnotation{std::string(kCanaryAnnotation), *canary_annotation,
                                                    "spec.canary.enabled", kube::canonical_json(*enabled)});
    }
  } else if (canary_annotation) {
    effective.enabled = *canary_annotation == "true";
    effective.enabled_source = CanarySource::Annotation;
  }

  const std::optional<std::string> target_annotation = annotation_of(object, kTargetVersionAnnotation);
  const JsonValue* target = alpha ? nullptr : spec_canary_field(object, "targetVersion");
  if (target != nullptr) {
    effective.target_source = CanarySource::Spec;
    if (target->IsString()) effective.target = std::string(target->GetString(), target->GetStringLength());
    if (target_annotation && target_annotation != effective.target) {
      effective.ignored.push_back(IgnoredAnnotation{std::string(kTargetVersionAnnotation), *target_annotation,
                                                    "spec.canary.targetVersion",
                                                    kube::canonical_json(*target)});
    }
  } else if (target_annotation) {
    effective.target = target_annotation;
    effective.target_source = CanarySource::Annotation;
  }
  return effective;
}

}  // namespace myop::myresource
