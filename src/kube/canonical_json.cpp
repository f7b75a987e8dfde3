#include "kube/canonical_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace myop::kube {
namespace {

using CanonicalWriter = rapidjson::Writer<rapidjson::StringBuffer>;

bool name_less(const JsonValue::Member* left, const JsonValue::Member* right) {
  const std::size_t left_length = left->name.GetStringLength();
  const std::size_t right_length = right->name.GetStringLength();
  const int order =
      std::memcmp(left->name.GetString(), right->name.GetString(), std::min(left_length, right_length));
  return order != 0 ? order < 0 : left_length < right_length;
}

void write_number(const JsonValue& value, CanonicalWriter& writer) {
  if (value.IsInt64()) {
    writer.Int64(value.GetInt64());
  } else if (value.IsUint64()) {
    writer.Uint64(value.GetUint64());
  } else {
    const double number = value.GetDouble();
    constexpr double largest_exact_integer = 9007199254740992.0;  // 2^53
    if (std::trunc(number) == number && std::fabs(number) <= largest_exact_integer) {
      writer.Int64(static_cast<std::int64_t>(number));
    } else {
      writer.Double(number);
    }
  }
}

std::vector<const JsonValue::Member*> sorted_members(const JsonValue& object) {
  std::vector<const JsonValue::Member*> members;
  members.reserve(object.MemberCount());
  for (const auto& member : object.GetObject()) members.push_back(&member);
  std::stable_sort(members.begin(), members.end(), name_less);
  return members;
}

std::string canonical_number(const JsonValue& number) {
  rapidjson::StringBuffer buffer;
  CanonicalWriter writer(buffer);
  write_number(number, writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

bool same_string(const JsonValue& left, const JsonValue& right) {
  return left.GetStringLength() == right.GetStringLength() &&
         std::memcmp(left.GetString(), right.GetString(), left.GetStringLength()) == 0;
}

void write_canonical(const JsonValue& value, CanonicalWriter& writer) {
  switch (value.GetType()) {
    case rapidjson::kObjectType: {
      writer.StartObject();
      for (const auto* member : sorted_members(value)) {
        writer.Key(member->name.GetString(), member->name.GetStringLength());
        write_canonical(member->value, writer);
      }
      writer.EndObject();
      return;
    }
    case rapidjson::kArrayType:
      writer.StartArray();
      for (const auto& element : value.GetArray()) write_canonical(element, writer);
      writer.EndArray();
      return;
    case rapidjson::kNumberType:
      write_number(value, writer);
      return;
    default:
      value.Accept(writer);  // null, true, false, string
      return;
  }
}

}  // namespace

bool canonical_equal(const JsonValue& left, const JsonValue& right) {
  if (left.GetType() != right.GetType()) {
    return false;  // RapidJSON gives true and false different types, as canonical_json does
  }
  switch (left.GetType()) {
    case rapidjson::kObjectType: {
      if (left.MemberCount() != right.MemberCount()) return false;
      const auto left_members = sorted_members(left);
      const auto right_members = sorted_members(right);
      for (std::size_t index = 0; index < left_members.size(); ++index) {
        if (!same_string(left_members[index]->name, right_members[index]->name) ||
            !canonical_equal(left_members[index]->value, right_members[index]->value)) {
          return false;
        }
      }
      return true;
    }
    case rapidjson::kArrayType: {
      if (left.Size() != right.Size()) return false;
      for (rapidjson::SizeType index = 0; index < left.Size(); ++index) {
        if (!canonical_equal(left[index], right[index])) return false;
      }
      return true;
    }
    case rapidjson::kNumberType:
      return canonical_number(left) == canonical_number(right);
    case rapidjson::kStringType:
      return same_string(left, right);
    default:
      return true;  // null, true, false: the type says it all
  }
}

std::string canonical_json(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  CanonicalWriter writer(buffer);
  write_canonical(value, writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace myop::kube
