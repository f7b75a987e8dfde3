#include "kube/json_parser.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

namespace myop::kube {
namespace {

// Forwards SAX events to the document that builds the tree, counting arrays and objects open; one too
// many stops the parse (the reader reports it as kParseErrorTermination at the current offset).
//
// Numbers come as text (kParseNumbersAsStringsFlag) and are read here with std::from_chars: an
// integer that fits 64 bits stays an integer, anything else is the double nearest to the text
// (correctly rounded). RapidJSON 1.1.0's own paths are either up to an ulp off for long decimals (the
// default; a double written by canonical_json then read back could differ, so hashing the same object
// twice through a round trip did not agree, found by the watch parser's fuzzer) or wrong outright
// ("0e150" read as 1.77e131 by kParseFullPrecisionFlag).
class DepthLimitedHandler {
 public:
  DepthLimitedHandler(rapidjson::Document& target, int maximum_depth)
      : target_(target), maximum_depth_(maximum_depth) {}

  bool too_deep() const { return too_deep_; }
  // The number that stopped the parse (out of a double's range), or empty.
  const std::string& bad_number() const { return bad_number_; }

  bool Null() { return target_.Null(); }
  bool Bool(bool value) { return target_.Bool(value); }
  bool Int(int value) { return target_.Int(value); }
  bool Uint(unsigned value) { return target_.Uint(value); }
  bool Int64(std::int64_t value) { return target_.Int64(value); }
  bool Uint64(std::uint64_t value) { return target_.Uint64(value); }
  bool Double(double value) { return target_.Double(value); }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    const char* const end = text + length;
    const std::string_view number(text, length);
    if (number.find_first_of(".eE") == std::string_view::npos) {
      if (number.front() == '-') {
        std::int64_t value = 0;
        const auto [last, error] = std::from_chars(text, end, value);
        if (error == std::errc() && last == end) return target_.Int64(value);
      } else {
        std::uint64_t value = 0;
        const auto [last, error] = std::from_chars(text, end, value);
        if (error == std::errc() && last == end) return target_.Uint64(value);
      }
    }
    double value = 0;
    const auto [last, error] = std::from_chars(text, end, value);
    if (error == std::errc::result_out_of_range && last == end) {
      // Too large (refused, as RapidJSON does) or too small: strtod says which, and rounds the
      // latter to a subnormal or zero as RapidJSON did.
      const std::string copy(number);
      value = std::strtod(copy.c_str(), nullptr);
      if (!std::isinf(value)) return target_.Double(value);
    } else if (error == std::errc() && last == end) {
      return target_.Double(value);
    }
    bad_number_ = number;
    return false;
  }
  bool String(const char* text, rapidjson::SizeType length, bool copy) {
    return target_.String(text, length, copy);
  }
  bool Key(const char* text, rapidjson::SizeType length, bool copy) {
    return target_.Key(text, length, copy);
  }
  bool StartObject() { return enter() && target_.StartObject(); }
  bool EndObject(rapidjson::SizeType count) {
    --depth_;
    return target_.EndObject(count);
  }
  bool StartArray() { return enter() && target_.StartArray(); }
  bool EndArray(rapidjson::SizeType count) {
    --depth_;
    return target_.EndArray(count);
  }

 private:
  bool enter() {
    if (++depth_ <= maximum_depth_) return true;
    too_deep_ = true;
    return false;
  }

  rapidjson::Document& target_;
  const int maximum_depth_;
  int depth_ = 0;
  bool too_deep_ = false;
  std::string bad_number_;
};

}  // namespace

Result<rapidjson::Document> parse_json_document(std::string_view text, const JsonLimits& limits,
                                                rapidjson::MemoryPoolAllocator<>* allocator) {
  if (text.size() > limits.maximum_bytes)
    return make_error(Reason::Unknown, "JSON text of " + std::to_string(text.size()) +
                                           " bytes is larger than the limit of " +
                                           std::to_string(limits.maximum_bytes) + " bytes");
  constexpr unsigned flags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag |
                             rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::Document document(allocator);
  rapidjson::MemoryStream bytes(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> input(bytes);
  rapidjson::ParseResult result;
  bool too_deep = false;
  std::string bad_number;
  // Populate moves the finished root out of the document's stack, as Parse would.
  auto generate = [&](rapidjson::Document& target) {
    DepthLimitedHandler handler(target, limits.maximum_depth);
    rapidjson::Reader reader;
    result = reader.Parse<flags>(input, handler);
    too_deep = handler.too_deep();
    bad_number = handler.bad_number();
    return !result.IsError();
  };
  document.Populate(generate);
  if (too_deep)
    return make_error(Reason::Unknown, "JSON nested deeper than " + std::to_string(limits.maximum_depth) +
                                           " arrays and objects at offset " +
                                           std::to_string(result.Offset()));
  if (!bad_number.empty())
    return make_error(Reason::Unknown, "JSON number " + bad_number.substr(0, 64) +
                                           " out of a double's range at offset " +
                                           std::to_string(result.Offset()));
  if (result.IsError())
    return make_error(Reason::Unknown, "invalid JSON at offset " + std::to_string(result.Offset()) + ": " +
                                           rapidjson::GetParseError_En(result.Code()));
  return document;
}

}  // namespace myop::kube
