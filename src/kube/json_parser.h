// The one JSON parser for everything the operator reads: API server answers (objects, list pages,
// metav1.Status bodies), watch lines, ConversionReviews, annotations it wrote itself, exec-plugin output.
//
// RapidJSON's iterative parser (no recursion, however deep the input), UTF-8 validated, and bounded:
//   - size: text longer than the caller's limit is refused before a byte is parsed; every use names its
//     limit (one object, a list page, an ExecCredential);
//   - depth: a document nested deeper than `maximum_depth` arrays and objects is refused as soon as the
//     parser reaches the first level too many, so no deeper tree is ever built.
// The depth bound protects what runs after the parse: RapidJSON's Accept and copy constructor and the
// helpers of kube/ (deep copy, canonical JSON, merge patch) and myresource/ (conversion) recurse once
// per level. Destroying a tree does not recurse (the pool allocator frees chunks, not values).
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <string_view>

#include "kube/errors.h"

namespace myop::kube {

// Every kind the operator reads has a schema that bounds its depth: the deepest paths of a Deployment
// (pod affinity terms, ephemeral volume claim templates) and their managedFields are under 20 levels, a
// CRD's openAPIV3Schema about 2 per level of its kind, and a list or watch envelope adds 2. 128 leaves
// that room many times over while a recursion of 128 frames stays far from any thread's stack size.
inline constexpr int kMaximumJsonDepth = 128;

// One object: the answer to a GET or a write, a watch line, a Status, a ConversionReview. etcd keeps at
// most 1.5 MiB per object by default and the API server refuses requests over 3 MiB; 16 MiB leaves room
// for a server configured with larger ones.
inline constexpr std::size_t kMaximumObjectJsonBytes = std::size_t{16} * 1024 * 1024;
// One LIST page (500 objects by default): 128 KiB an object on average, many times a Deployment with its
// managedFields (about 6 KiB). Parsing a page and copying its items costs about 2.5 times its size at
// the peak, which still fits the chart's 512Mi memory limit; a larger page is refused with an error that
// names the limit instead of the pod being OOM-killed with its webhook.
inline constexpr std::size_t kMaximumListJsonBytes = std::size_t{64} * 1024 * 1024;

struct JsonLimits {
  std::size_t maximum_bytes = kMaximumObjectJsonBytes;
  int maximum_depth = kMaximumJsonDepth;
};

// Parses `text`, which must be one JSON value and nothing else. The values live in `allocator` when one
// is given (it must outlive the document; Object::parse passes its own pool), else in the document's
// own. Errors are Reason::Unknown and say what was wrong and where:
//   "JSON text of 17000000 bytes is larger than the limit of 16777216 bytes"
//   "JSON nested deeper than 128 arrays and objects at offset 128"
//   "invalid JSON at offset 7: Missing a comma or '}' after an object member."
Result<rapidjson::Document> parse_json_document(std::string_view text, const JsonLimits& limits,
                                                rapidjson::MemoryPoolAllocator<>* allocator = nullptr);

}  // namespace myop::kube
