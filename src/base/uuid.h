#pragma once
// Random identifiers.
#include <string>

namespace myop::base {

// A random UUID (RFC 4122 version 4), lower case: reconcile ids, the suffix of a replica's identity.
// Not for secrets: the generator is the thread's std::mt19937_64 (base/random.h).
std::string random_uuid();

}  // namespace myop::base
