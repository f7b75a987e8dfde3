// MyResource (myorg.io/v1alpha1) as C++ values, read from the JSON the API server sends.
//
// The CRD's schema and CEL rules are the first line of validation; `parse_myresource` is the second.
// It exists for objects that got past an API server without them (a CRD installed by hand without
// CEL, an older CRD, a storage migration) and never throws: every problem becomes a sentence in
// `ParsedMyResource::problems`, which the reconciler reports as Degraded/InvalidSpec.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object.h"
#include "kube/resource.h"
#include "myresource/conditions.h"

namespace myop::myresource {

inline constexpr std::string_view kGroup = "myorg.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "myorg.io/v1alpha1";
inline constexpr std::string_view kKind = "MyResource";
inline constexpr std::string_view kPlural = "myresources";
// The CRD's name: <plural>.<group>.
inline constexpr std::string_view kCrdName = "myresources.myorg.io";

// The REST collection of MyResources: the one definition every part of the operator uses.
inline kube::ResourceType myresource_type() {
  return {std::string(kGroup), std::string(kVersion), std::string(kPlural), true, std::string(kKind)};
}

inline constexpr std::string_view kFinalizer = "myorg.io/finalizer";
inline constexpr std::string_view kFieldManager = "my-operator";

// Annotations a user sets on a MyResource.
inline constexpr std::string_view kCanaryAnnotation = "myorg.io/canary";
inline constexpr std::string_view kTargetVersionAnnotation = "myorg.io/targetVersion";
inline constexpr std::string_view kFeaturesAnnotation = "myorg.io/features";

inline constexpr std::int32_t kDefaultReplicas = 1;
inline constexpr std::int32_t kMaximumReplicas = 1000;
inline constexpr std::int32_t kDefaultCanaryReplicas = 1;
inline constexpr std::int32_t kDefaultProgressDeadlineSeconds = 600;
inline constexpr std::int32_t kMaximumProgressDeadlineSeconds = 86400;
// Names are label values on the children (limit 63).
inline constexpr std::size_t kMaximumNameLength = 63;

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

// Quantities are kept as the text the user wrote ("100m", "1Gi"; an integer becomes its digits):
// the API server parses them when it validates the Deployment.
struct Resources {
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
  bool operator==(const Resources&) const = default;
};

struct CanarySettings {
  std::int32_t replicas = kDefaultCanaryReplicas;
  std::int32_t progress_deadline_seconds = kDefaultProgressDeadlineSeconds;
  bool operator==(const CanarySettings&) const = default;
};

struct Spec {
  std::string image;
  std::int32_t replicas = kDefaultReplicas;
  std::optional<std::int32_t> port;
  std::vector<EnvVar> env;
  Resources resources;
  bool paused = false;
  // The stable Deployment's progressDeadlineSeconds; unset leaves the Deployment's default (600).
  std::optional<std::int32_t> progress_deadline_seconds;
  CanarySettings canary;
  // The pod's automountServiceAccountToken. Unset leaves the field off the pod template (the
  // ServiceAccount decides; Kubernetes mounts the token), so objects written before the field
  // existed keep their spec hash and their pods on an operator upgrade.
  std::optional<bool> automount_service_account_token;
  bool operator==(const Spec&) const = default;
};

struct Status {
  std::int64_t observed_generation = 0;
  std::string spec_hash;
  std::string image;
  std::string canary_image;
  std::int32_t replicas = 0;
  std::int32_t ready_replicas = 0;
  std::int32_t updated_replicas = 0;
  std::string replica_summary;  // "ready/desired", shown by the Replicas printer column
  std::vector<Condition> conditions;
};

// The metadata the domain reads. Labels and annotations are copied: a MyResource is small.
struct Metadata {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::map<std::string, std::string, std::less<>> labels;
  std::map<std::string, std::string, std::less<>> annotations;
  std::vector<std::string> finalizers;
  std::optional<std::string> deletion_timestamp;

  bool has_finalizer(std::string_view finalizer) const;
  std::optional<std::string_view> annotation(std::string_view key) const;
};

struct MyResource {
  Metadata metadata;
  Spec spec;
  Status status;
};

struct ParsedMyResource {
  MyResource resource;                // best effort: fields that could not be read keep their defaults
  std::vector<std::string> problems;  // one sentence per problem, naming the field

  bool valid() const { return problems.empty(); }
  // All problems joined with "; ", for the InvalidSpec condition message.
  std::string problem_message() const;
};

// Reads a MyResource object (apiVersion/kind/metadata/spec/status) and validates its spec.
ParsedMyResource parse_myresource(const kube::JsonValue& object);

// The value checks of the CRD, repeated: image pinned, replicas 0..1000, port 1..65535, env names,
// canary bounds. Empty when valid.
std::vector<std::string> validate_spec(const Spec& spec);

// Reads one metav1.Condition; nullopt when type or status is missing or malformed.
std::optional<Condition> parse_condition(const kube::JsonValue& value);

}  // namespace myop::myresource
