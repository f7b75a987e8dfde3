#include "myresource/features.h"

#include <algorithm>
#include <cctype>

#include "base/text.h"

namespace myop::myresource {
namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char character) { return static_cast<char>(std::tolower(character)); });
  return result;
}

// Sets one flag; returns an error sentence or "". `source` names where the value came from.
std::string apply_flag(Features& features, std::string_view key, std::string_view raw_value,
                       std::string_view source) {
  std::string value = lower(base::trim(raw_value));
  auto quote = [](std::string_view text) { return "\"" + std::string(text) + "\""; };
  if (key == kCanaryFeature || key == kOrphanSweepFeature) {
    bool enabled;
    if (value == "true") {
      enabled = true;
    } else if (value == "false") {
      enabled = false;
    } else {
      return std::string(source) + ": " + std::string(key) + "=" + quote(raw_value) +
             " is not a boolean: use true or false";
    }
    (key == kCanaryFeature ? features.canary : features.orphan_sweep) = enabled;
    return "";
  }
  if (key == kOrphanPolicyFeature) {
    if (value == "delete") {
      features.orphan_policy = OrphanPolicy::Delete;
    } else if (value == "report") {
      features.orphan_policy = OrphanPolicy::Report;
    } else {
      return std::string(source) + ": orphanPolicy=" + quote(raw_value) +
             " is not a policy: use delete or report";
    }
    return "";
  }
  return std::string(source) + ": unknown feature flag " + quote(key) + std::string(kKnownFeatureFlags);
}

}  // namespace

std::string_view to_string(OrphanPolicy policy) {
  return policy == OrphanPolicy::Delete ? "delete" : "report";
}

Features with_overrides(const Features& base, const FeatureOverrides& overrides) {
  Features features = base;
  if (overrides.canary) features.canary = *overrides.canary;
  if (overrides.orphan_sweep) features.orphan_sweep = *overrides.orphan_sweep;
  if (overrides.orphan_policy) features.orphan_policy = *overrides.orphan_policy;
  return features;
}

ParsedFeatures features_from_config_map(const std::map<std::string, std::string, std::less<>>& data,
                                        const Features& defaults) {
  ParsedFeatures parsed{defaults, {}};
  for (const auto& [key, value] : data) {
    std::string error = apply_flag(parsed.features, key, value, "feature ConfigMap");
    if (!error.empty()) parsed.errors.push_back(std::move(error));
  }
  return parsed;
}

ParsedFeatures features_from_config_map_object(const kube::JsonValue* config_map, const Features& defaults) {
  std::map<std::string, std::string, std::less<>> data;
  if (config_map != nullptr) {
    const kube::JsonValue* values = kube::find_member(*config_map, "data");
    if (values != nullptr && values->IsObject()) {
      for (const auto& member : values->GetObject()) {
        if (member.value.IsString()) {
          data[std::string(member.name.GetString(), member.name.GetStringLength())] =
              std::string(member.value.GetString(), member.value.GetStringLength());
        }
      }
    }
  }
  return features_from_config_map(data, defaults);
}

ParsedFeatures features_from_changed_config_map(const kube::JsonValue* config_map, const Features& previous) {
  Features start;  // built-in defaults for absent keys
  const kube::JsonValue* values = config_map != nullptr ? kube::find_member(*config_map, "data") : nullptr;
  auto present = [&](std::string_view key) {
    return values != nullptr && values->IsObject() && kube::find_member(*values, key) != nullptr;
  };
  if (present(kCanaryFeature)) start.canary = previous.canary;
  if (present(kOrphanSweepFeature)) start.orphan_sweep = previous.orphan_sweep;
  if (present(kOrphanPolicyFeature)) start.orphan_policy = previous.orphan_policy;
  return features_from_config_map_object(config_map, start);
}

ParsedFeatures apply_feature_overrides(const Features& base, std::string_view annotation_value) {
  ParsedFeatures parsed{base, {}};
  constexpr std::string_view source = "spec.features (v1alpha1: annotation myorg.io/features)";
  std::string_view rest = annotation_value;
  while (!base::trim(rest).empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = base::trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;  // tolerate "a=b,,c=d" and a trailing comma
    std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      parsed.errors.push_back(std::string(source) + ": \"" + std::string(item) +
                              "\" is not name=value (e.g. orphanSweep=false)");
      continue;
    }
    std::string error =
        apply_flag(parsed.features, base::trim(item.substr(0, equals)), item.substr(equals + 1), source);
    if (!error.empty()) parsed.errors.push_back(std::move(error));
  }
  return parsed;
}

}  // namespace myop::myresource
