// libFuzzer target: the one bounded JSON parser (kube/json_parser.h).
//
// Input: one byte that picks the depth limit (0..63), then the JSON text. Checked against RapidJSON's
// own iterative parse of the same text with the same flags, numbers kept as their text:
//   - the bounded parser accepts exactly the texts the reference accepts whose nesting fits the limit
//     (and whose numbers fit a double),
//   - what it accepts is the same tree as the reference's, each number the integer the text says when
//     it fits 64 bits, else the double strtod makes of it (correctly rounded),
//   - a text over the size limit is refused whatever it holds.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/json_parser.h"

namespace {

// A property failed: crash so that libFuzzer keeps the input.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

// Arrays and objects nested at the deepest point, counted without recursion.
int depth_of(const rapidjson::Value& root) {
  int deepest = 0;
  std::vector<std::pair<const rapidjson::Value*, int>> pending{{&root, 0}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (value->IsArray()) {
      deepest = std::max(deepest, depth + 1);
      for (const auto& element : value->GetArray()) pending.emplace_back(&element, depth + 1);
    } else if (value->IsObject()) {
      deepest = std::max(deepest, depth + 1);
      for (const auto& member : value->GetObject()) pending.emplace_back(&member.value, depth + 1);
    }
  }
  return deepest;
}

// Whether every number of the text is within a double's range (strtod does not say infinity): the
// bounded parser refuses one that is not. Same trees and bounds as same_tree below.
bool finite_numbers(const rapidjson::Value& shape, const rapidjson::Value& texts) {
  if (shape.IsNumber()) return !std::isinf(std::strtod(texts.GetString(), nullptr));
  if (shape.IsArray()) {
    for (rapidjson::SizeType index = 0; index < shape.Size(); ++index)
      if (!finite_numbers(shape[index], texts[index])) return false;
  } else if (shape.IsObject()) {
    auto text = texts.MemberBegin();
    for (auto member = shape.MemberBegin(); member != shape.MemberEnd(); ++member, ++text)
      if (!finite_numbers(member->value, text->value)) return false;
  }
  return true;
}

bool same_number(const rapidjson::Value& ours, const std::string& text) {
  const bool integral = text.find_first_of(".eE") == std::string::npos;
  errno = 0;
  if (integral && text[0] == '-') {
    const long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == 0) return ours.IsInt64() && ours.GetInt64() == value;
  } else if (integral) {
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == 0) return ours.IsUint64() && ours.GetUint64() == value;
  }
  const double value = std::strtod(text.c_str(), nullptr);
  if (!ours.IsDouble()) return false;
  const double parsed = ours.GetDouble();
  return std::memcmp(&parsed, &value, sizeof value) == 0;
}

// `shape` is the reference's tree, `texts` the same text parsed with kParseNumbersAsStringsFlag (a
// number of `shape` is a string holding its text there). Recursion is bounded: only trees within the
// fuzzer's depth limit get here.
bool same_tree(const rapidjson::Value& ours, const rapidjson::Value& shape, const rapidjson::Value& texts) {
  if (shape.IsNumber())
    return texts.IsString() && same_number(ours, std::string(texts.GetString(), texts.GetStringLength()));
  if (ours.GetType() != shape.GetType()) return false;
  if (ours.IsArray()) {
    if (ours.Size() != shape.Size()) return false;
    for (rapidjson::SizeType index = 0; index < ours.Size(); ++index)
      if (!same_tree(ours[index], shape[index], texts[index])) return false;
    return true;
  }
  if (ours.IsObject()) {
    if (ours.MemberCount() != shape.MemberCount()) return false;
    auto text = texts.MemberBegin();
    for (auto left = ours.MemberBegin(), right = shape.MemberBegin(); left != ours.MemberEnd();
         ++left, ++right, ++text)
      if (left->name != right->name || !same_tree(left->value, right->value, text->value)) return false;
    return true;
  }
  return ours == shape;  // strings, null, true, false
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int depth_limit = data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  myop::kube::JsonLimits limits{myop::kube::kMaximumObjectJsonBytes, depth_limit};
  auto bounded = myop::kube::parse_json_document(text, limits);

  rapidjson::Document reference;
  constexpr unsigned flags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  reference.Parse<flags>(text.data(), text.size());
  bool reference_fits = !reference.HasParseError() && depth_of(reference) <= depth_limit;
  rapidjson::Document texts;
  if (reference_fits) {
    texts.Parse<flags | rapidjson::kParseNumbersAsStringsFlag>(text.data(), text.size());
    require(!texts.HasParseError());
    reference_fits = finite_numbers(reference, texts);
  }
  require(bounded.ok() == reference_fits);
  if (bounded.ok()) {
    require(depth_of(bounded.value()) <= depth_limit);
    require(same_tree(bounded.value(), reference, texts));
  }

  if (!text.empty()) {
    auto too_large = myop::kube::parse_json_document(text, myop::kube::JsonLimits{text.size() - 1, 64});
    require(!too_large.ok());
  }
  return 0;
}
