// Kubernetes' protobuf encoding of built-in kinds (application/vnd.kubernetes.protobuf), decoded straight
// into the JSON tree objects are held in (kube/object.h): no JSON text in between.
//
// The schema is upstream's: the generated.proto files of k8s.io/api and k8s.io/apimachinery at the pinned
// Kubernetes version (third_party/kubernetes-proto, copied by hack/update-kubernetes-proto.sh), compiled
// by protoc into a descriptor set built into the binary. The decoder walks the wire format with
// libprotobuf's CodedInputStream, guided by those descriptors, and builds the tree the API server's JSON
// of the same object parses to. Field names are the JSON names (go-to-protobuf names every field after its
// json tag). Where the two encodings differ, the JSON's rules are followed, from two lists the update
// script derives from the Go types (third_party/kubernetes-proto):
//   - Go's protobuf writes a non-pointer string, number or boolean even when it is empty; the JSON omits
//     it when its tag says omitempty (omit-empty-fields.txt), and so does the decoder. A pointer field
//     set to zero (spec.replicas of a Deployment scaled to zero) is kept, as in the JSON;
//   - an embedded struct (Volume's VolumeSource, Probe's ProbeHandler) is a nested message on the wire and
//     inline in the JSON (inline-fields.txt): its members go into the parent's object;
//   - types whose JSON is not their protobuf shape are written as their JSON marshallers write them:
//     metav1.Time "2026-11-29T19:18:40Z" (null when unset), MicroTime with microseconds, Duration "1m30s",
//     resource.Quantity its string, intstr.IntOrString a number or a string, FieldsV1 and RawExtension the
//     JSON they hold, bytes base64;
//   - members come in field-number order (Go's struct order, which is also the JSON's).
//
// The wire (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): an answer is the 4-byte magic "k8s\0"
// and a runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose raw is the
// object without its TypeMeta, which the decoder sets from the envelope (a list's items from the list's
// kind, which the JSON of built-in lists leaves out). A watch (`;stream=watch`) is frames of a 4-byte
// big-endian length and a metav1.WatchEvent{type, object{raw}}, raw being an enveloped object.
//
// Bounded like the JSON parser (kube/json_parser.h): messages nest at most kMaximumJsonDepth deep, and
// the callers bound the bytes (one object, a list page, a watch frame). Thread-safe: the schema is built
// once, on first use, and never changes.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/object.h"

namespace myop::kube {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";
// What a client accepts for a kind with a protobuf schema: protobuf, else JSON (a server or an
// aggregated API that cannot encode it answers JSON, which the client then parses).
inline constexpr std::string_view kProtobufOrJsonAccept =
    "application/vnd.kubernetes.protobuf, application/json;q=0.9";

// True for "application/vnd.kubernetes.protobuf" with or without parameters (";stream=watch").
bool is_protobuf_media_type(std::string_view content_type);

// True when `api_version` and `kind` name a built-in kind of the compiled-in schema (Deployment,
// Secret, ConfigMap, Lease, Event, Namespace, Pod, ...): requests for it may ask for protobuf.
bool protobuf_schema_known(std::string_view api_version, std::string_view kind);

struct ProtobufDecodeOptions {
  // Skips metadata.managedFields on the wire instead of building it (a cache drops it anyway).
  bool drop_managed_fields = false;
};

// An enveloped answer ("k8s\0" + runtime.Unknown): a GET's object, a LIST page, a Status.
Result<rapidjson::Document> decode_protobuf_document(std::string_view body,
                                                     const ProtobufDecodeOptions& options = {});
Result<Object> decode_protobuf_object(std::string_view body, const ProtobufDecodeOptions& options = {});

// One frame of a `;stream=watch` body (without its length prefix): the event type ("ADDED", ...,
// "ERROR") and its object (for ERROR, a metav1.Status).
struct ProtobufWatchEvent {
  std::string type;
  Object object;
};
Result<ProtobufWatchEvent> decode_protobuf_watch_event(std::string_view frame,
                                                       const ProtobufDecodeOptions& options = {});

// Go's time.Duration.String() of `nanoseconds` ("1h2m3.5s", "1.5ms", "0s"): metav1.Duration's JSON.
std::string go_duration_string(std::int64_t nanoseconds);

}  // namespace myop::kube
