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

void write_canonical(const JsonValue& value, CanonicalWriter& writer) {
  switch (value.GetType()) {
    case rapidjson::kObjectType: {
      std::vector<const JsonValue::Member*> members;
      members.reserve(value.MemberCount());
      for (const auto& member : value.GetObject()) members.push_back(&member);
      std::stable_sort(members.begin(), members.end(), name_less);
      writer.StartObject();
      for (const auto* member : members) {
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

std::string canonical_json(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  CanonicalWriter writer(buffer);
  write_canonical(value, writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace myop::kube
