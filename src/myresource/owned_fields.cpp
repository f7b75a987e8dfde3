#include "myresource/owned_fields.h"

#include <cmath>
#include <optional>
#include <string_view>

#include "runtime/controller/event_handler.h"

namespace myop::myresource {
namespace {

using kube::find_member;
using kube::JsonValue;

std::string_view text(const JsonValue& value) { return {value.GetString(), value.GetStringLength()}; }

// A resource quantity as a number: "100m" -> 0.1, "1Gi" -> 1073741824, "1e3" -> 1000.
std::optional<long double> quantity_value(std::string_view quantity) {
  if (quantity.empty()) return std::nullopt;
  std::size_t position = 0;
  if (quantity[0] == '+' || quantity[0] == '-') ++position;
  std::size_t digits_start = position;
  while (position < quantity.size() &&
         (std::isdigit(static_cast<unsigned char>(quantity[position])) != 0 || quantity[position] == '.')) {
    ++position;
  }
  if (position == digits_start) return std::nullopt;
  long double number = 0;
  try {
    number = std::stold(std::string(quantity.substr(0, position)));
  } catch (...) {
    return std::nullopt;
  }
  std::string_view suffix = quantity.substr(position);
  struct Suffix {
    std::string_view text;
    long double factor;
  };
  static constexpr Suffix kSuffixes[] = {
      {"", 1.0L},
      {"n", 1e-9L},
      {"u", 1e-6L},
      {"m", 1e-3L},
      {"k", 1e3L},
      {"M", 1e6L},
      {"G", 1e9L},
      {"T", 1e12L},
      {"P", 1e15L},
      {"E", 1e18L},
      {"Ki", 1024.0L},
      {"Mi", 1048576.0L},
      {"Gi", 1073741824.0L},
      {"Ti", 1099511627776.0L},
      {"Pi", 1125899906842624.0L},
      {"Ei", 1152921504606846976.0L},
  };
  for (const Suffix& candidate : kSuffixes) {
    if (suffix == candidate.text) return number * candidate.factor;
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    try {
      std::size_t used = 0;
      int exponent = std::stoi(std::string(suffix.substr(1)), &used);
      if (used == suffix.size() - 1) return number * std::pow(10.0L, exponent);
    } catch (...) {
    }
  }
  return std::nullopt;
}

bool same_quantity(std::string_view left, std::string_view right) {
  auto left_value = quantity_value(left);
  auto right_value = quantity_value(right);
  if (!left_value || !right_value) return false;
  long double scale = std::max(std::fabs(*left_value), std::fabs(*right_value));
  return std::fabs(*left_value - *right_value) <= scale * 1e-12L;
}

// The key list items are matched by, if any.
const char* item_key(const JsonValue& item) {
  if (!item.IsObject()) return nullptr;
  for (const char* key : {"uid", "name", "containerPort"}) {
    if (item.HasMember(key)) return key;
  }
  return nullptr;
}

std::string describe_key(const JsonValue& value) {
  if (value.IsString()) return std::string(text(value));
  if (value.IsInt64()) return std::to_string(value.GetInt64());
  return "?";
}

bool scalars_equal(const JsonValue& desired, const JsonValue& live, bool in_quantities) {
  if (desired.IsString() && live.IsString()) {
    if (text(desired) == text(live)) return true;
    return in_quantities && same_quantity(text(desired), text(live));
  }
  if (desired.IsNumber() && live.IsNumber()) {
    if (desired.IsInt64() && live.IsInt64()) return desired.GetInt64() == live.GetInt64();
    return desired.GetDouble() == live.GetDouble();
  }
  if (in_quantities && desired.IsString() && live.IsNumber()) {
    return same_quantity(text(desired), std::to_string(live.GetInt64()));
  }
  return desired == live;
}

// An owner reference's apiVersion matches in any version of the group: the owner is the object of
// that uid, whatever version wrote the reference (myorg.io/v1alpha1 by the previous release), and
// rewriting a child for the version alone would be a write for nothing.
bool same_owner_api_group(const JsonValue& desired, const JsonValue& live) {
  if (!desired.IsString() || !live.IsString()) return false;
  const std::string group = runtime::group_of(text(desired));
  return !group.empty() && group == runtime::group_of(text(live));
}

// The path of an item of the owner references (the items are matched by uid).
constexpr std::string_view kOwnerReferencePath = "metadata.ownerReferences[";

// Returns the path of the first difference, or nullopt when `desired` is contained in `live`.
std::optional<std::string> difference(const JsonValue& desired, const JsonValue* live,
                                      const std::string& path, bool in_quantities) {
  if (live == nullptr) {
    if (desired.IsString() && desired.GetStringLength() == 0) return std::nullopt;
    return path;
  }
  if (desired.IsObject()) {
    if (!live->IsObject()) return path;
    for (const auto& member : desired.GetObject()) {
      std::string_view key = text(member.name);
      bool quantities = in_quantities || key == "requests" || key == "limits";
      std::string child_path = path.empty() ? std::string(key) : path + "." + std::string(key);
      const JsonValue* live_member = find_member(*live, key);
      if (key == "apiVersion" && path.starts_with(kOwnerReferencePath) && live_member != nullptr &&
          same_owner_api_group(member.value, *live_member)) {
        continue;
      }
      if (auto found = difference(member.value, live_member, child_path, quantities)) return found;
    }
    return std::nullopt;
  }
  if (desired.IsArray()) {
    if (!live->IsArray()) return path;
    for (rapidjson::SizeType index = 0; index < desired.Size(); ++index) {
      const JsonValue& item = desired[index];
      const char* key = item_key(item);
      if (key != nullptr) {
        const JsonValue& key_value = item[key];
        const JsonValue* match = nullptr;
        for (const JsonValue& candidate : live->GetArray()) {
          if (candidate.IsObject() && candidate.HasMember(key) && candidate[key] == key_value)
            match = &candidate;
        }
        std::string item_path = path + "[" + describe_key(key_value) + "]";
        if (auto found = difference(item, match, item_path, in_quantities)) return found;
      } else if (item.IsObject() || item.IsArray()) {
        const JsonValue* match = index < live->Size() ? &(*live)[index] : nullptr;
        if (auto found = difference(item, match, path + "[" + std::to_string(index) + "]", in_quantities)) {
          return found;
        }
      } else {
        bool present = false;
        for (const JsonValue& candidate : live->GetArray())
          present = present || scalars_equal(item, candidate, false);
        if (!present) return path + "[" + std::to_string(index) + "]";
      }
    }
    return std::nullopt;
  }
  if (!scalars_equal(desired, *live, in_quantities)) return path;
  return std::nullopt;
}

}  // namespace

bool owned_fields_match(const kube::JsonValue& desired, const kube::JsonValue& live) {
  return !difference(desired, &live, "", false).has_value();
}

std::string first_owned_field_difference(const kube::JsonValue& desired, const kube::JsonValue& live) {
  return difference(desired, &live, "", false).value_or("");
}

}  // namespace myop::myresource
