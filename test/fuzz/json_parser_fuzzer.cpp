// libFuzzer target: the one bounded JSON parser (kube/json_parser.h).
//
// Input: one byte that picks the depth limit (0..63), then the JSON text. Checked against RapidJSON's
// own iterative parse of the same text with the same flags:
//   - the bounded parser accepts exactly the texts the reference accepts whose nesting fits the limit,
//   - what it accepts is the same tree (same serialization) as the reference's,
//   - a text over the size limit is refused whatever it holds.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
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

std::string serialized(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);  // recursion bounded: only trees within the fuzzer's depth limit get here
  return std::string(buffer.GetString(), buffer.GetSize());
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
  const bool reference_fits = !reference.HasParseError() && depth_of(reference) <= depth_limit;
  require(bounded.ok() == reference_fits);
  if (bounded.ok()) {
    require(depth_of(bounded.value()) <= depth_limit);
    require(serialized(bounded.value()) == serialized(reference));
  }

  if (!text.empty()) {
    auto too_large = myop::kube::parse_json_document(text, myop::kube::JsonLimits{text.size() - 1, 64});
    require(!too_large.ok());
  }
  return 0;
}
