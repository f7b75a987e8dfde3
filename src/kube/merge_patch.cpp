#include "kube/merge_patch.h"

#include "kube/canonical_json.h"

namespace myop::kube {
namespace {

JsonValue copied_name(const JsonValue& name, JsonAllocator& allocator) {
  return JsonValue(name.GetString(), name.GetStringLength(), allocator);
}

// Fills `patch` (an empty object) with the members that turn `original` into `modified`; both objects.
void diff_objects(const JsonValue& original, const JsonValue& modified, JsonValue& patch,
                  JsonAllocator& allocator) {
  for (const auto& member : original.GetObject()) {
    if (!modified.HasMember(member.name)) {
      patch.AddMember(copied_name(member.name, allocator), JsonValue(rapidjson::kNullType), allocator);
    }
  }
  for (const auto& member : modified.GetObject()) {
    auto found = original.FindMember(member.name);
    if (found == original.MemberEnd()) {
      // Adding a null member is a no-op in merge-patch terms: the member is absent either way.
      if (!member.value.IsNull()) {
        patch.AddMember(copied_name(member.name, allocator), deep_copy_value(member.value, allocator),
                        allocator);
      }
      continue;
    }
    // Equal as the hash sees it (1 and 1.0 are equal, key order does not matter).
    if (canonical_equal(found->value, member.value)) continue;
    if (found->value.IsObject() && member.value.IsObject()) {
      JsonValue nested(rapidjson::kObjectType);
      diff_objects(found->value, member.value, nested, allocator);
      if (nested.MemberCount() > 0) patch.AddMember(copied_name(member.name, allocator), nested, allocator);
      continue;
    }
    patch.AddMember(copied_name(member.name, allocator), deep_copy_value(member.value, allocator), allocator);
  }
}

// MergePatch applied to a value that does not exist yet: objects lose their null members.
JsonValue patch_onto_nothing(const JsonValue& patch, JsonAllocator& allocator) {
  if (!patch.IsObject()) return deep_copy_value(patch, allocator);
  JsonValue target(rapidjson::kObjectType);
  apply_merge_patch(target, patch, allocator);
  return target;
}

}  // namespace

Object create_merge_patch(const JsonValue& original, const JsonValue& modified, std::size_t chunk_size) {
  if (!original.IsObject() || !modified.IsObject()) return Object::copy_of(modified);
  Object patch(chunk_size);
  diff_objects(original, modified, patch.json(), patch.allocator());
  return patch;
}

bool is_empty_merge_patch(const JsonValue& patch) { return patch.IsObject() && patch.MemberCount() == 0; }

void apply_merge_patch(JsonValue& target, const JsonValue& patch, JsonAllocator& allocator) {
  if (!patch.IsObject()) {
    target = deep_copy_value(patch, allocator);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (const auto& member : patch.GetObject()) {
    auto found = target.FindMember(member.name);
    if (member.value.IsNull()) {
      if (found != target.MemberEnd()) target.EraseMember(found);
      continue;
    }
    if (found == target.MemberEnd()) {
      target.AddMember(copied_name(member.name, allocator), patch_onto_nothing(member.value, allocator),
                       allocator);
    } else {
      apply_merge_patch(found->value, member.value, allocator);
    }
  }
}

}  // namespace myop::kube
