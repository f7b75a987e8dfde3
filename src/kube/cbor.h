// CBOR (RFC 8949) as the API server serves custom resources where the CBORServingAndStorage feature gate
// is on (KEP-4222: application/cbor, watches application/cbor-seq), decoded with libcbor's streaming
// decoder straight into the JSON tree objects are held in (kube/object.h): no JSON text in between.
//
// What the API server writes (k8s.io/apimachinery/pkg/runtime/serializer/cbor): one data item prefixed
// with the self-described CBOR tag (55799, bytes d9 d9 f7); strings, map keys included, as byte strings
// (read here as strings, as the server's own decoder does); definite lengths only; []byte as a byte
// string under tag 22 (expected base64: written here as base64, as in its JSON); the shortest float
// that keeps the value. Mapped to JSON: maps -> objects (keys must be strings), arrays, integers
// (int64 range, as unstructured objects allow), floats (no NaN or infinity), true, false, null
// (undefined too). Indefinite lengths are refused, as the server's decoder refuses them; other tags
// are read through (their content is the value).
//
// Bounded like the JSON parser (kube/json_parser.h): at most kMaximumJsonDepth nested arrays and maps,
// no allocation sized by a length the input claims beyond the bytes it has; the callers bound the bytes.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string_view>

#include "kube/errors.h"
#include "kube/object.h"

namespace myop::kube {

inline constexpr std::string_view kCborMediaType = "application/cbor";
// What a client accepts for a custom resource: CBOR, else JSON (a server without the gate answers JSON).
inline constexpr std::string_view kCborOrJsonAccept = "application/cbor, application/json;q=0.9";

// True for application/cbor and application/cbor-seq (a watch), with or without parameters.
bool is_cbor_media_type(std::string_view content_type);

// Exactly one data item (trailing bytes are an error).
Result<rapidjson::Document> decode_cbor_document(std::string_view bytes);
// `drop_managed_fields`: metadata.managedFields is skipped instead of built (a cache drops it anyway).
Result<Object> decode_cbor_object(std::string_view bytes, bool drop_managed_fields = false);

// The size of the first complete data item of `bytes` (a CBOR sequence, RFC 8742): nullopt while it is
// incomplete; an Error when it is malformed (the rest of the sequence cannot be trusted).
Result<std::optional<std::size_t>> cbor_item_size(std::string_view bytes);

}  // namespace myop::kube
