// Desired state: MyResource -> the Deployments the operator owns, as pure functions.
//
// Each result is a complete apps/v1 Deployment ready for server-side apply with field manager
// my-operator: it contains exactly the fields the operator owns (so apply takes ownership of those and
// nothing else, and an edit of one of them by hand is put back), and no status, resourceVersion or
// defaulted fields. See docs/design.md "What the operator writes".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "kube/object.h"
#include "myresource/types.h"

namespace myop::myresource {

// Labels on every child. Argo CD's tracking label app.kubernetes.io/instance is never copied: the
// children would otherwise show up in Argo CD as extraneous resources of the Application and be pruned.
inline constexpr std::string_view kNameLabel = "app.kubernetes.io/name";
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "my-operator";
inline constexpr std::string_view kMyResourceLabel = "myorg.io/myresource";
inline constexpr std::string_view kTrackLabel = "myorg.io/track";

// Annotations on every child.
inline constexpr std::string_view kSpecHashAnnotation = "myorg.io/spec-hash";
inline constexpr std::string_view kObservedGenerationAnnotation = "myorg.io/observed-generation";
// On the canary only: when the canary with its current image started, for progressDeadlineSeconds.
inline constexpr std::string_view kCanaryStartedAtAnnotation = "myorg.io/canary-started-at";

inline constexpr std::string_view kContainerName = "app";
inline constexpr std::string_view kCanarySuffix = "-canary";

enum class Track { Stable, Canary };

std::string_view to_string(Track track);  // "stable" / "canary", the value of myorg.io/track

// "<name>" or "<name>-canary".
std::string deployment_name(std::string_view myresource_name, Track track);

// The four labels of the Deployment and its pods.
std::map<std::string, std::string> child_labels(std::string_view myresource_name, Track track);

// The selector of the Deployment. Immutable once created, so it holds only labels that never change
// for a given MyResource and track; it includes the track so stable and canary never share pods.
std::map<std::string, std::string> child_selector(std::string_view myresource_name, Track track);

// The stable Deployment "<name>": spec.image at spec.replicas.
kube::Object desired_stable_deployment(const MyResource& resource);

// What the canary Deployment should run; decided by canary.h.
struct CanaryDeploymentPlan {
  std::string image;
  std::int32_t replicas = 0;  // 0 once the canary failed: scaled away, kept so the failure is visible
  std::string started_at;     // RFC 3339, kept on the canary as myorg.io/canary-started-at
};

// The canary Deployment "<name>-canary".
kube::Object desired_canary_deployment(const MyResource& resource, const CanaryDeploymentPlan& plan);

}  // namespace myop::myresource
