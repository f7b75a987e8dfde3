// The spec hash: a short fingerprint of a desired Deployment spec.
//
// It is stored on the Deployment (annotation myorg.io/spec-hash) and in MyResource status.specHash.
// Comparing it with the desired hash tells "does the live child run what we want?" without comparing
// whole objects, which always differ because the API server defaults many fields.
#pragma once

#include <string>

#include "kube/object.h"

namespace myop::myresource {

inline constexpr std::size_t kSpecHashLength = 16;  // hex digits: 64 bits, plenty to tell specs apart

// SHA-256 over kube::canonical_json(spec), first kSpecHashLength hex digits (lower case). Member order,
// whitespace and number spelling do not change it.
std::string spec_hash(const kube::JsonValue& spec);

}  // namespace myop::myresource
