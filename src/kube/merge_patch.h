// JSON merge patch (RFC 7386): computing the patch between two documents and applying one.
//
// Merge patches replace arrays wholesale and use null to delete a member, so a patch cannot set a member
// to null; `create_merge_patch` turns "became null" into "deleted", like the API server does.
#pragma once

#include <cstddef>

#include "kube/object.h"

namespace myop::kube {

// The patch that turns `original` into `modified`: `{}` when they are equal, `modified` itself when
// either is not an object.
Object create_merge_patch(const JsonValue& original, const JsonValue& modified,
                          std::size_t chunk_size = kSmallChunkSize);

// True when `patch` changes nothing (an empty object).
bool is_empty_merge_patch(const JsonValue& patch);

// RFC 7386 MergePatch(target, patch), in place. Strings and values are copied into `allocator`, which
// must be the allocator that owns `target`.
void apply_merge_patch(JsonValue& target, const JsonValue& patch, JsonAllocator& allocator);
inline void apply_merge_patch(Object& target, const JsonValue& patch) {
  apply_merge_patch(target.json(), patch, target.allocator());
}

}  // namespace myop::kube
