// Conversion of whole MyResource objects between myorg.io/v1alpha1 and myorg.io/v1beta1 (the hub),
// as a conversion webhook receives and returns them: JSON in, JSON out, pure, never throwing.
// docs/versioning.md "v1beta1" is the design; test/unit/myresource/conversion_test.cpp proves it.
//
// What moves (everything else, metadata, status and unknown fields included, is copied as it is):
//
//   v1alpha1                                 v1beta1
//   annotation myorg.io/canary "true"|"false" spec.canary.enabled true|false
//   annotation myorg.io/targetVersion <tag>   spec.canary.targetVersion <tag>
//   annotation myorg.io/features "k=v,..."    spec.features {canary: bool, orphanSweep: bool,
//                                                            orphanPolicy: delete|report}
//
// In v1beta1 the two canary annotations also count where spec.canary leaves their field unset
// (effective_canary.h): v1beta1 -> v1alpha1 writes myorg.io/canary and myorg.io/targetVersion from
// the spec field when it is set and copies the v1beta1 annotation otherwise, so both versions read
// the same canary. v1alpha1 -> v1beta1 moves them into spec.canary, as the table says.
//
// Lossless both ways. A value keeps its meaning in the other version (myorg.io/canary "yes" means no
// canary, so it becomes enabled: false; a features text keeps its valid entries, the last one of a
// name winning, as the operator applies them). What the other version cannot hold as it is (the text
// "yes", a features text with spaces, capitals or a bad entry, an unknown field that collides with a
// moved one, a v1beta1 annotation named like a v1alpha1 one) is kept in an annotation of the
// converted object: myorg.io/conversion-v1alpha1 on a v1beta1 object holds v1alpha1 values,
// myorg.io/conversion-v1beta1 on a v1alpha1 object holds v1beta1 values. Converting back removes it
// and puts each value back, unless the object was changed meanwhile so that the kept value would
// mean something else than the object now says: then the object wins and the value is dropped.
//
// The kept annotation's value is a JSON object: for each place, its JSON Pointer (RFC 6901) and a
// list of the original value, or an empty list when the place was absent, e.g.
//   {"/metadata/annotations/myorg.io~1canary":["yes"]}
// Both annotation names are reserved for the conversion: a value in this form is read as kept values.
// A value not in this form (places other than those the conversion writes, another shape) is an
// ordinary annotation and survives like any other.
#pragma once

#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/object.h"

namespace myop::myresource {

inline constexpr std::string_view kApiVersionV1alpha1 = "myorg.io/v1alpha1";
inline constexpr std::string_view kApiVersionV1beta1 = "myorg.io/v1beta1";

// On a v1beta1 object: the v1alpha1 values that v1beta1 cannot hold.
inline constexpr std::string_view kV1alpha1ValuesAnnotation = "myorg.io/conversion-v1alpha1";
// On a v1alpha1 object: the v1beta1 values that v1alpha1 cannot hold.
inline constexpr std::string_view kV1beta1ValuesAnnotation = "myorg.io/conversion-v1beta1";

// `object` (a MyResource of either version) as `to_api_version`. An object already of that version
// is returned as it is. Errors (Reason::BadRequest) for a non-object, an apiVersion that is neither
// version, and a shape no API server stores (metadata not an object, an annotation value not a
// string, spec or spec.canary not an object).
kube::Result<kube::Object> convert_myresource(const kube::JsonValue& object, std::string_view to_api_version);

// v1beta1 spec.features for a myorg.io/features text: its valid entries in the order of their first
// appearance, the last value of a name winning; bad entries (no '=', unknown names, bad values) are
// left out, as apply_feature_overrides skips them.
kube::Object features_from_annotation(std::string_view text);

// The myorg.io/features text for v1beta1 spec.features: "name=value" in member order, joined by ','.
// Members that are not feature flags with a valid value are left out.
std::string features_annotation(const kube::JsonValue& features);

}  // namespace myop::myresource
