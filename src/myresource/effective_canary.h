// The canary a MyResource asks for, read the same way on every served version (docs/versioning.md
// "Canary annotations on every version"). Pure: JSON in, values out.
//
//   v1alpha1: the annotations myorg.io/canary (exactly "true" runs a canary) and myorg.io/targetVersion.
//   v1beta1:  spec.canary.enabled and spec.canary.targetVersion, the typed form, win field by field;
//             the same two annotations supply a field that spec.canary leaves unset. So
//             `kubectl annotate mr web myorg.io/canary=true myorg.io/targetVersion=1.29`, which writes
//             the v1beta1 object (kubectl's preferred version), starts a canary.
//
// A field is set in spec.canary when it is present and not null, whatever its type (a value of the
// wrong type is a spec problem that parse_myresource reports; it still hides the annotation).
// The conversion (conversion.h) writes each v1alpha1 annotation from this reading of the v1beta1
// object, so the two versions never disagree about whether there is a canary, nor about its target.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/object.h"

namespace myop::myresource {

// An annotation that spec.canary overrides with another value, or myorg.io/features written on a
// v1beta1 object (where spec.features is the only form): the annotation is ignored. Reported by the
// reconciler (an AnnotationIgnored event) and, on the write, by the admission policy
// myresources.myorg.io-canary-annotations-ignored (a warning).
struct IgnoredAnnotation {
  std::string annotation;   // myorg.io/canary, myorg.io/targetVersion or myorg.io/features
  std::string value;        // the annotation's value
  std::string field;        // spec.canary.enabled, spec.canary.targetVersion or spec.features
  std::string field_value;  // what the field holds, as JSON text (true, "1.29"); "unset" when absent

  // One sentence for an event: which annotation, why it is ignored, and what to do.
  std::string message() const;
  bool operator==(const IgnoredAnnotation&) const = default;
};

// Where a field of the effective canary comes from.
enum class CanarySource {
  Unset,       // neither the spec field nor the annotation
  Spec,        // spec.canary.<field> (v1beta1)
  Annotation,  // the annotation (v1alpha1; v1beta1 when spec.canary leaves the field unset)
};

struct EffectiveCanary {
  bool enabled = false;               // a canary is asked for
  std::optional<std::string> target;  // the target tag; nullopt when neither version sets one
  CanarySource enabled_source = CanarySource::Unset;
  CanarySource target_source = CanarySource::Unset;
  // Annotations that disagree with the spec field that wins (v1beta1 only). An annotation that says
  // what the field says changes nothing and is not listed.
  std::vector<IgnoredAnnotation> ignored;

  // Whether both say the same about the canary (enabled and target), wherever it came from.
  bool same_canary(const EffectiveCanary& other) const {
    return enabled == other.enabled && target == other.target;
  }
};

// The effective canary of a MyResource object of either version. An object of any other apiVersion
// is read as v1beta1. Never throws; a member of an unexpected shape counts as absent.
EffectiveCanary effective_canary(const kube::JsonValue& object);

}  // namespace myop::myresource
