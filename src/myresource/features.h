// Feature flags: the operator-wide switches of the ConfigMap (`--config-map`), and the per-object
// overrides of v1beta1 `spec.features` (v1alpha1: the `myorg.io/features` annotation,
// "orphanSweep=false,canary=true").
//
// A bad value never stops the operator: the flag keeps its previous (or default) value and the error
// says which key, which value, and what would be accepted, so it can be logged and shown as an event.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object.h"

namespace myop::myresource {

enum class OrphanPolicy {
  Delete,  // delete Deployments whose controller owner is gone
  Report,  // only count them (metric) and emit an event
};

std::string_view to_string(OrphanPolicy policy);

// ConfigMap keys, spec.features members and annotation keys (the same names in all places).
inline constexpr std::string_view kCanaryFeature = "canary";
inline constexpr std::string_view kOrphanSweepFeature = "orphanSweep";
inline constexpr std::string_view kOrphanPolicyFeature = "orphanPolicy";
// What a message about an unknown flag name says after it.
inline constexpr std::string_view kKnownFeatureFlags =
    " (known flags: canary, orphanSweep, orphanPolicy; names are case-sensitive)";

struct Features {
  bool canary = true;
  bool orphan_sweep = true;
  // Report by default: a Deployment left without an owner is often the result of
  // `kubectl delete --cascade=orphan`, where the user asked for it to stay.
  OrphanPolicy orphan_policy = OrphanPolicy::Report;

  bool operator==(const Features&) const = default;
};

// One object's overrides (v1beta1 spec.features): a flag that is not set keeps the operator's value.
struct FeatureOverrides {
  std::optional<bool> canary;
  std::optional<bool> orphan_sweep;
  std::optional<OrphanPolicy> orphan_policy;

  bool operator==(const FeatureOverrides&) const = default;
};

// `base` with the flags `overrides` sets.
Features with_overrides(const Features& base, const FeatureOverrides& overrides);

struct ParsedFeatures {
  Features features;
  std::vector<std::string> errors;  // one sentence per bad key or value

  bool ok() const { return errors.empty(); }
};

// Applies the ConfigMap `data` on top of `defaults`. Keys that are not feature flags are errors too
// (a typo such as "orphansweep" would otherwise be silently ignored).
ParsedFeatures features_from_config_map(const std::map<std::string, std::string, std::less<>>& data,
                                        const Features& defaults = Features{});

// The same, from a ConfigMap object as the informer holds it (its `data`); nullptr (no ConfigMap)
// gives `defaults`.
ParsedFeatures features_from_config_map_object(const kube::JsonValue* config_map,
                                               const Features& defaults = Features{});

// The ConfigMap's flags when it changed: a key that is absent takes its built-in default, a key
// with a good value takes that value, and a key with a bad value keeps its `previous` value (the
// last good one), so a typo such as `canary: "flase"` changes nothing while it is fixed.
ParsedFeatures features_from_changed_config_map(const kube::JsonValue* config_map, const Features& previous);

// Applies the v1alpha1 `myorg.io/features` annotation value ("name=value,name=value") on top of
// `base`. An empty value changes nothing. The reconciler reads spec.features (FeatureOverrides);
// this is for the errors of a v1alpha1 text (InvalidFeatureOverride events).
ParsedFeatures apply_feature_overrides(const Features& base, std::string_view annotation_value);

}  // namespace myop::myresource
