// Canonical JSON text for hashing: equal documents give equal bytes, whatever their member order,
// whitespace or number spelling.
//
// Rules: object members sorted by name (bytewise UTF-8, so stable across platforms), no whitespace,
// strings escaped the same way every time, integers as integers, a double that holds an integer value of
// at most 2^53 written as that integer (1.0 -> 1, -0.0 -> 0), other doubles in their shortest
// round-trip form. Duplicate member names keep their relative order.
#pragma once

#include <string>

#include "kube/object.h"

namespace myop::kube {

std::string canonical_json(const JsonValue& value);

// canonical_json(left) == canonical_json(right), without building the strings. Unlike RapidJSON's
// operator== it agrees with the hash: 2^63 as an integer and as a double are different here.
bool canonical_equal(const JsonValue& left, const JsonValue& right);

}  // namespace myop::kube
