// MyResource as C++ values, read from the JSON the API server sends: the hub, myorg.io/v1beta1
// (docs/versioning.md). The operator lists, watches and writes v1beta1; an object given as v1alpha1
// (a test, anything older) is converted to v1beta1 first (convert_myresource) and then read, so the
// domain (canary, features, desired state, status) sees only typed fields. The canary's enabled and
// target are the effective ones (effective_canary.h): spec.canary's, or the annotations' where
// spec.canary leaves a field unset.
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
#include "myresource/conversion.h"
#include "myresource/effective_canary.h"
#include "myresource/features.h"

namespace myop::myresource {

inline constexpr std::string_view kGroup = "myorg.io";
// The version the operator works on: the hub.
inline constexpr std::string_view kApiVersion = kApiVersionV1beta1;
inline constexpr std::string_view kVersion = kApiVersion.substr(kGroup.size() + 1);
static_assert(kApiVersion.starts_with(kGroup) && kVersion == "v1beta1");
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

// Annotations a user sets on a v1alpha1 MyResource; in v1beta1 they are spec fields (conversion.h).
// The canary's two also work on a v1beta1 object, where spec.canary leaves their field unset
// (effective_canary.h); myorg.io/features means nothing in v1beta1.
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
  // The effective canary (effective_canary.h): spec.canary.enabled, else annotation myorg.io/canary
  // exactly "true"; absent is false.
  bool enabled = false;
  // The effective target: spec.canary.targetVersion, else annotation myorg.io/targetVersion; "" when
  // neither is set.
  std::string target_version;
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
  // spec.features (v1alpha1: annotation myorg.io/features): this object's feature flag overrides.
  FeatureOverrides features;
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
  // Bad feature overrides: entries of a v1alpha1 myorg.io/features text that v1beta1 cannot hold
  // (kept by the conversion), or spec.features members of the wrong type. The object still works
  // with the valid part; the reconciler reports each as an InvalidFeatureOverride event.
  std::vector<std::string> feature_problems;
  // Canary annotations of a v1beta1 object that spec.canary overrides with another value, and a
  // myorg.io/features annotation written on v1beta1; the reconciler reports each as an
  // AnnotationIgnored event.
  std::vector<IgnoredAnnotation> ignored_annotations;

  bool valid() const { return problems.empty(); }
  // All problems joined with "; ", for the InvalidSpec condition message.
  std::string problem_message() const;
};

// Reads a MyResource object (apiVersion/kind/metadata/spec/status) and validates its spec. A v1alpha1
// object is converted to v1beta1 first; any other object is read as v1beta1.
ParsedMyResource parse_myresource(const kube::JsonValue& object);

// The value checks of the CRD, repeated: image pinned, replicas 0..1000, port 1..65535, env names,
// canary bounds. Empty when valid.
std::vector<std::string> validate_spec(const Spec& spec);

// Reads one metav1.Condition; nullopt when type or status is missing or malformed.
std::optional<Condition> parse_condition(const kube::JsonValue& value);

}  // namespace myop::myresource
