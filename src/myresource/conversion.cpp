#include "myresource/conversion.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "base/text.h"
#include "kube/canonical_json.h"
#include "myresource/effective_canary.h"
#include "myresource/features.h"
#include "myresource/types.h"

namespace myop::myresource {
namespace {

using kube::JsonValue;
using kube::Object;
using Path = std::vector<std::string_view>;

constexpr std::string_view kEnabledField = "enabled";
constexpr std::string_view kTargetVersionField = "targetVersion";
constexpr std::string_view kFeaturesField = "features";

// Every place a conversion writes, empties or drops, innermost first: comparing in this order, an
// outer place is compared after its inner places were made equal, so it only differs in what they
// do not cover (its presence). The same list serves both directions.
const std::vector<Path>& places() {
  static const std::vector<Path> list = {
      {"metadata", "annotations", kCanaryAnnotation},
      {"metadata", "annotations", kTargetVersionAnnotation},
      {"metadata", "annotations", kFeaturesAnnotation},
      {"metadata", "annotations", kV1alpha1ValuesAnnotation},
      {"metadata", "annotations", kV1beta1ValuesAnnotation},
      {"metadata", "annotations"},
      {"spec", "canary", kEnabledField},
      {"spec", "canary", kTargetVersionField},
      {"spec", "canary"},
      {"spec", kFeaturesField},
      {"spec"},
  };
  return list;
}

// RFC 6901: '~' is written "~0" and '/' "~1".
std::string pointer(const Path& path) {
  std::string text;
  for (std::string_view segment : path) {
    text += '/';
    for (char character : segment) {
      if (character == '~') {
        text += "~0";
      } else if (character == '/') {
        text += "~1";
      } else {
        text += character;
      }
    }
  }
  return text;
}

const JsonValue* value_at(const JsonValue& root, const Path& path) {
  const JsonValue* current = &root;
  for (std::string_view segment : path) {
    if (!current->IsObject()) return nullptr;
    current = kube::find_member(*current, segment);
    if (current == nullptr) return nullptr;
  }
  return current;
}

// Sets the value at `path`, creating the objects on the way.
void set_at(Object& object, const Path& path, const JsonValue& value) {
  JsonValue* parent = &object.json();
  for (std::size_t index = 0; index + 1 < path.size(); ++index) {
    JsonValue* child = kube::find_member(*parent, path[index]);
    if (child == nullptr || !child->IsObject()) {
      object.set_member(*parent, path[index], JsonValue(rapidjson::kObjectType));
      child = kube::find_member(*parent, path[index]);
    }
    parent = child;
  }
  object.set_member(*parent, path.back(), value);
}

void erase_at(Object& object, const Path& path) {
  JsonValue* parent = &object.json();
  for (std::size_t index = 0; index + 1 < path.size(); ++index) {
    parent = kube::find_member(*parent, path[index]);  // null past a missing or non-object step
    if (parent == nullptr) return;
  }
  kube::erase_member(*parent, path.back());
}

bool same(const JsonValue* left, const JsonValue* right) {
  if (left == nullptr || right == nullptr) return left == right;
  return kube::canonical_equal(*left, *right);
}

std::optional<std::string_view> string_at(const JsonValue& root, const Path& path) {
  const JsonValue* value = value_at(root, path);
  if (value == nullptr || !value->IsString()) return std::nullopt;
  return std::string_view(value->GetString(), value->GetStringLength());
}

// Removes the annotations that carry meaning in either version (they are rewritten from the spec or
// kept as values of the other version), and the annotations map when that empties it: the API server
// stores no empty map.
void erase_moved_annotations(Object& object) {
  for (std::string_view key : {kCanaryAnnotation, kTargetVersionAnnotation, kFeaturesAnnotation,
                               kV1alpha1ValuesAnnotation, kV1beta1ValuesAnnotation}) {
    object.erase_annotation(key);
  }
  const JsonValue* annotations = value_at(object.json(), {"metadata", "annotations"});
  if (annotations != nullptr && annotations->IsObject() && annotations->ObjectEmpty()) {
    erase_at(object, {"metadata", "annotations"});
  }
}

void set_api_version(Object& object, std::string_view api_version) {
  object.set_string_member(object.json(), "apiVersion", api_version);
}

// v1alpha1 -> v1beta1 by the table of conversion.h alone, without keeping anything.
Object to_v1beta1_plain(const JsonValue& alpha) {
  Object beta = Object::copy_of(alpha);
  set_api_version(beta, kApiVersionV1beta1);
  std::optional<std::string_view> canary = string_at(alpha, {"metadata", "annotations", kCanaryAnnotation});
  std::optional<std::string_view> target =
      string_at(alpha, {"metadata", "annotations", kTargetVersionAnnotation});
  std::optional<std::string_view> features =
      string_at(alpha, {"metadata", "annotations", kFeaturesAnnotation});
  erase_moved_annotations(beta);
  // Fields v1alpha1 does not know, kept as unknown fields, would collide with the moved values.
  erase_at(beta, {"spec", "canary", kEnabledField});
  erase_at(beta, {"spec", "canary", kTargetVersionField});
  erase_at(beta, {"spec", kFeaturesField});
  // Anything but exactly "true" runs no canary in v1alpha1 (canary.cpp).
  if (canary) set_at(beta, {"spec", "canary", kEnabledField}, JsonValue(*canary == "true"));
  if (target) {
    JsonValue value(target->data(), static_cast<rapidjson::SizeType>(target->size()), beta.allocator());
    set_at(beta, {"spec", "canary", kTargetVersionField}, value);
  }
  if (features) set_at(beta, {"spec", kFeaturesField}, features_from_annotation(*features).json());
  return beta;
}

// A spec.canary field is set when present and not null (effective_canary.h).
const JsonValue* set_field(const JsonValue* value) {
  return value == nullptr || value->IsNull() ? nullptr : value;
}

// v1beta1 -> v1alpha1 by the table of conversion.h alone, without keeping anything. The canary
// annotations say what the v1beta1 object's effective canary is: a spec.canary field when it is set
// (a value of a type v1alpha1 cannot write gives no annotation), else the v1beta1 annotation as it is.
Object to_v1alpha1_plain(const JsonValue& beta) {
  Object alpha = Object::copy_of(beta);
  set_api_version(alpha, kApiVersionV1alpha1);
  std::optional<std::string_view> canary_annotation =
      string_at(beta, {"metadata", "annotations", kCanaryAnnotation});
  std::optional<std::string_view> target_annotation =
      string_at(beta, {"metadata", "annotations", kTargetVersionAnnotation});
  erase_moved_annotations(alpha);
  const JsonValue* enabled = value_at(beta, {"spec", "canary", kEnabledField});
  const JsonValue* target = value_at(beta, {"spec", "canary", kTargetVersionField});
  const JsonValue* features = value_at(beta, {"spec", kFeaturesField});
  erase_at(alpha, {"spec", "canary", kEnabledField});
  erase_at(alpha, {"spec", "canary", kTargetVersionField});
  // A spec.canary that held only the moved fields came from the annotations: v1alpha1 has none.
  const JsonValue* canary = value_at(alpha.json(), {"spec", "canary"});
  if ((enabled != nullptr || target != nullptr) && canary != nullptr && canary->IsObject() &&
      canary->ObjectEmpty()) {
    erase_at(alpha, {"spec", "canary"});
  }
  erase_at(alpha, {"spec", kFeaturesField});
  if (set_field(enabled) != nullptr) {
    if (enabled->IsBool()) alpha.set_annotation(kCanaryAnnotation, enabled->GetBool() ? "true" : "false");
  } else if (canary_annotation) {
    alpha.set_annotation(kCanaryAnnotation, *canary_annotation);
  }
  if (set_field(target) != nullptr) {
    if (target->IsString()) {
      alpha.set_annotation(kTargetVersionAnnotation,
                           std::string_view(target->GetString(), target->GetStringLength()));
    }
  } else if (target_annotation) {
    alpha.set_annotation(kTargetVersionAnnotation, *target_annotation);
  }
  if (features != nullptr && features->IsObject()) {
    alpha.set_annotation(kFeaturesAnnotation, features_annotation(*features));
  }
  return alpha;
}

using PlainConversion = Object (*)(const JsonValue&);

// The places where `original` differs from `converted_back` (its plain conversion there and back),
// as the kept-values JSON of conversion.h: the values the converted object cannot hold.
Object kept_values(const JsonValue& original, Object converted_back) {
  Object kept;
  for (const Path& path : places()) {
    const JsonValue* wanted = value_at(original, path);
    if (same(wanted, value_at(converted_back.json(), path))) continue;
    JsonValue entry(rapidjson::kArrayType);
    if (wanted != nullptr) entry.PushBack(kube::deep_copy_value(*wanted, kept.allocator()), kept.allocator());
    kept.set_member(kept.json(), pointer(path), entry);
    if (wanted != nullptr) {
      set_at(converted_back, path, *wanted);
    } else {
      erase_at(converted_back, path);
    }
  }
  return kept;
}

bool is_string_map(const JsonValue& value) {
  return value.IsObject() && std::all_of(value.MemberBegin(), value.MemberEnd(),
                                         [](const auto& member) { return member.value.IsString(); });
}

// Kept values exactly as kept_values writes them, or nullopt: then the text is an ordinary annotation.
std::optional<Object> parse_kept_values(std::string_view text) {
  auto parsed = Object::parse(text);
  if (!parsed.ok() || !parsed->json().IsObject() || parsed->json().ObjectEmpty()) return std::nullopt;
  for (const auto& member : parsed->json().GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    auto path = std::find_if(places().begin(), places().end(),
                             [&](const Path& candidate) { return pointer(candidate) == name; });
    if (path == places().end() || !member.value.IsArray() || member.value.Size() > 1) return std::nullopt;
    if (member.value.Empty()) continue;
    const JsonValue& value = member.value[0];
    bool fits = true;
    if (path->size() == 3 && (*path)[1] == "annotations") {
      fits = value.IsString();
    } else if (path->size() == 2 && (*path)[1] == "annotations") {
      fits = is_string_map(value);
    } else if (*path == Path{"spec"} || *path == Path{"spec", "canary"}) {
      fits = value.IsObject();
    }
    if (!fits) return std::nullopt;
  }
  return std::move(parsed).value();
}

// Puts kept values back, each only when the other version reads the object the same with it as
// without it, or reads exactly `source`, the object as it was given (otherwise the object was changed
// since, and the object wins). The second matters where the other version keeps a text as it is
// (a v1beta1 annotation myorg.io/canary "yes" reads as "yes" in v1alpha1, where the spec field it
// becomes would read as "false"). First all of them (the
// object as it was, when nothing was changed that they touch); then each canary annotation together
// with its spec.canary field, since in v1beta1 either can say what the other says (an annotation
// alone would read differently while its field is set, and the field alone while the annotation
// was the one that spoke); then place by place, outermost first. A map that a step leaves empty and
// that was absent goes with it.
void restore_kept_values(Object& object, const JsonValue& kept, PlainConversion back,
                         const JsonValue& source) {
  static const std::vector<Path> outermost_first(places().rbegin(), places().rend());
  static const std::vector<std::vector<Path>> groups = [] {
    std::vector<std::vector<Path>> list = {
        outermost_first,
        {{"spec", "canary", kEnabledField}, {"metadata", "annotations", kCanaryAnnotation}},
        {{"spec", "canary", kTargetVersionField}, {"metadata", "annotations", kTargetVersionAnnotation}},
    };
    for (const Path& path : outermost_first) list.push_back({path});
    return list;
  }();
  const Object reading = back(object.json());
  for (const std::vector<Path>& group : groups) {
    const bool all = &group == &groups.front();
    Object candidate = object.deep_copy();
    bool touched = false;
    for (const Path& path : group) {
      const JsonValue* entry = kube::find_member(kept, pointer(path));
      if (entry == nullptr) continue;
      touched = true;
      if (entry->Empty()) {
        erase_at(candidate, path);
      } else {
        set_at(candidate, path, (*entry)[0]);
      }
    }
    if (!touched) continue;
    // A map that the restored values leave empty, and that the object had not, goes too.
    for (const Path& map : {Path{"spec", "canary"}, Path{"metadata", "annotations"}}) {
      const JsonValue* entry = kube::find_member(kept, pointer(map));
      const JsonValue* value = value_at(candidate.json(), map);
      if (entry != nullptr && entry->Empty() && value != nullptr && value->IsObject() &&
          value->ObjectEmpty()) {
        erase_at(candidate, map);
      }
    }
    // Put back one by one, an annotation that spec.canary overrides would read the same, but it
    // would be an ignored annotation the object did not have as it was given.
    if (!all &&
        effective_canary(candidate.json()).ignored.size() > effective_canary(object.json()).ignored.size()) {
      continue;
    }
    const Object candidate_reading = back(candidate.json());
    if (kube::canonical_equal(candidate_reading.json(), source) ||
        kube::canonical_equal(candidate_reading.json(), reading.json())) {
      object = std::move(candidate);
      if (all) return;
    }
  }
}

struct Direction {
  std::string_view incoming_values;  // the annotation of the input that holds values of the target version
  std::string_view outgoing_values;  // the annotation of the output that holds values of the input version
  PlainConversion forward;
  PlainConversion back;
};

Object convert(const JsonValue& input, const Direction& direction) {
  Object core = Object::copy_of(input);
  std::optional<Object> incoming;
  if (auto text = core.view().annotation(direction.incoming_values)) incoming = parse_kept_values(*text);
  if (incoming) {
    core.erase_annotation(direction.incoming_values);
    const JsonValue* annotations = value_at(core.json(), {"metadata", "annotations"});
    if (annotations != nullptr && annotations->ObjectEmpty()) erase_at(core, {"metadata", "annotations"});
  }
  Object result = direction.forward(core.json());
  if (incoming) restore_kept_values(result, incoming->json(), direction.back, core.json());
  Object outgoing = kept_values(core.json(), direction.back(result.json()));
  if (!outgoing.json().ObjectEmpty())
    result.set_annotation(direction.outgoing_values, outgoing.to_json_string());
  return result;
}

kube::Error bad_request(std::string message) {
  return kube::make_error(kube::Reason::BadRequest, std::move(message));
}

// Passes on the shapes the conversion reads; an API server stores no other.
kube::Result<void> check_shape(const JsonValue& object) {
  const JsonValue* metadata = kube::find_member(object, "metadata");
  if (metadata == nullptr || !metadata->IsObject()) {
    return bad_request("cannot convert the MyResource: metadata is missing or not an object");
  }
  if (const JsonValue* annotations = kube::find_member(*metadata, "annotations")) {
    if (!annotations->IsObject())
      return bad_request("cannot convert the MyResource: metadata.annotations is not an object");
    for (const auto& member : annotations->GetObject()) {
      if (!member.value.IsString()) {
        return bad_request("cannot convert the MyResource: the value of annotation " +
                           std::string(member.name.GetString(), member.name.GetStringLength()) +
                           " is not a string");
      }
    }
  }
  if (const JsonValue* spec = kube::find_member(object, "spec")) {
    if (!spec->IsObject()) return bad_request("cannot convert the MyResource: spec is not an object");
    if (const JsonValue* canary = kube::find_member(*spec, "canary");
        canary != nullptr && !canary->IsObject()) {
      return bad_request("cannot convert the MyResource: spec.canary is not an object");
    }
  }
  return {};
}

bool is_known_version(std::string_view api_version) {
  return api_version == kApiVersionV1alpha1 || api_version == kApiVersionV1beta1;
}

std::string lower_case(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char character) { return static_cast<char>(std::tolower(character)); });
  return result;
}

// One myorg.io/features entry as features.cpp reads it: the value trimmed and case-insensitive.
std::optional<JsonValue> feature_value(std::string_view name, std::string_view raw_value) {
  std::string value = lower_case(base::trim(raw_value));
  if (name == kCanaryFeature || name == kOrphanSweepFeature) {
    if (value == "true") return JsonValue(true);
    if (value == "false") return JsonValue(false);
    return std::nullopt;
  }
  if (name == kOrphanPolicyFeature && (value == "delete" || value == "report")) {
    return JsonValue(rapidjson::StringRef(value == "delete" ? "delete" : "report"));
  }
  return std::nullopt;
}

}  // namespace

kube::Result<Object> convert_myresource(const JsonValue& object, std::string_view to_api_version) {
  if (!is_known_version(to_api_version)) {
    return bad_request("cannot convert a MyResource to apiVersion \"" + std::string(to_api_version) +
                       "\": known are " + std::string(kApiVersionV1alpha1) + " and " +
                       std::string(kApiVersionV1beta1));
  }
  if (!object.IsObject()) return bad_request("cannot convert a MyResource: the object is not a JSON object");
  std::string_view from = kube::ObjectView(object).api_version();
  if (!is_known_version(from)) {
    return bad_request("cannot convert a MyResource of apiVersion \"" + std::string(from) + "\": known are " +
                       std::string(kApiVersionV1alpha1) + " and " + std::string(kApiVersionV1beta1));
  }
  if (auto shaped = check_shape(object); !shaped) return std::move(shaped).error();
  if (from == to_api_version) return Object::copy_of(object);
  if (to_api_version == kApiVersionV1beta1) {
    return convert(
        object, {kV1beta1ValuesAnnotation, kV1alpha1ValuesAnnotation, &to_v1beta1_plain, &to_v1alpha1_plain});
  }
  return convert(
      object, {kV1alpha1ValuesAnnotation, kV1beta1ValuesAnnotation, &to_v1alpha1_plain, &to_v1beta1_plain});
}

Object features_from_annotation(std::string_view text) {
  Object features;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = base::trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view name = base::trim(item.substr(0, equals));
    std::optional<JsonValue> value = feature_value(name, item.substr(equals + 1));
    if (value) features.set_member(features.json(), name, *value);
  }
  return features;
}

std::string features_annotation(const JsonValue& features) {
  std::string text;
  if (!features.IsObject()) return text;
  for (const auto& member : features.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    std::string value;
    if ((name == kCanaryFeature || name == kOrphanSweepFeature) && member.value.IsBool()) {
      value = member.value.GetBool() ? "true" : "false";
    } else if (name == kOrphanPolicyFeature && member.value.IsString() &&
               (member.value == "delete" || member.value == "report")) {
      value = member.value.GetString();
    } else {
      continue;
    }
    if (!text.empty()) text += ',';
    text += std::string(name) + "=" + value;
  }
  return text;
}

}  // namespace myop::myresource
