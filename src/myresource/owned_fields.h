// "Does the live object still hold every field we set, with our values?"
//
// The spec hash says whether the desired spec changed since the last apply; it cannot see a hand
// edit of the live object (kubectl edit of replicas or image leaves our annotation intact). This
// check can: it walks the desired object and compares each field we set with the live one, ignoring
// everything the API server or other managers added (defaults, extra labels, extra containers).
//
// Matching follows the list semantics Kubernetes uses for these types: list items with a `name`
// (containers, env), a `uid` (ownerReferences, checked first) or a `containerPort` (ports) are matched by
// that key, lists of scalars by membership. Quantities compare by value ("1000m" equals "1", since the API
// server rewrites them), and a desired empty string matches an absent field (the server drops
// empty env values). An owner reference's apiVersion matches any version of the same group: a child
// whose controller reference names myorg.io/v1alpha1 (written by the previous release) is not
// rewritten for naming v1beta1, as the owner is the one of that uid.
#pragma once

#include <string>

#include "kube/object.h"

namespace myop::myresource {

// True when every field of `desired` is present in `live` with an equal value.
bool owned_fields_match(const kube::JsonValue& desired, const kube::JsonValue& live);

// The first field path that differs ("spec.template.spec.containers[app].image"), "" when none.
// For logs: says why a write happens.
std::string first_owned_field_difference(const kube::JsonValue& desired, const kube::JsonValue& live);

}  // namespace myop::myresource
