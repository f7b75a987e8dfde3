#include "kube/json_parser.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstdint>
#include <string>
#include <utility>

namespace myop::kube {
namespace {

// Forwards SAX events to the document that builds the tree, counting arrays and objects open; one too
// many stops the parse (the reader reports it as kParseErrorTermination at the current offset).
class DepthLimitedHandler {
 public:
  DepthLimitedHandler(rapidjson::Document& target, int maximum_depth)
      : target_(target), maximum_depth_(maximum_depth) {}

  bool too_deep() const { return too_deep_; }

  bool Null() { return target_.Null(); }
  bool Bool(bool value) { return target_.Bool(value); }
  bool Int(int value) { return target_.Int(value); }
  bool Uint(unsigned value) { return target_.Uint(value); }
  bool Int64(std::int64_t value) { return target_.Int64(value); }
  bool Uint64(std::uint64_t value) { return target_.Uint64(value); }
  bool Double(double value) { return target_.Double(value); }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool copy) {
    return target_.RawNumber(text, length, copy);
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
};

}  // namespace

Result<rapidjson::Document> parse_json_document(std::string_view text, const JsonLimits& limits,
                                                rapidjson::MemoryPoolAllocator<>* allocator) {
  if (text.size() > limits.maximum_bytes)
    return make_error(Reason::Unknown, "JSON text of " + std::to_string(text.size()) +
                                           " bytes is larger than the limit of " +
                                           std::to_string(limits.maximum_bytes) + " bytes");
  // Not kParseFullPrecisionFlag: RapidJSON 1.1.0's full-precision path reads "0e150" as 1.77e131 (found
  // by fuzzing). The default path may be an ulp off for long decimals, but it is deterministic, which is
  // what hashing needs; integers are exact either way.
  constexpr unsigned flags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  rapidjson::Document document(allocator);
  rapidjson::MemoryStream bytes(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> input(bytes);
  rapidjson::ParseResult result;
  bool too_deep = false;
  // Populate moves the finished root out of the document's stack, as Parse would.
  auto generate = [&](rapidjson::Document& target) {
    DepthLimitedHandler handler(target, limits.maximum_depth);
    rapidjson::Reader reader;
    result = reader.Parse<flags>(input, handler);
    too_deep = handler.too_deep();
    return !result.IsError();
  };
  document.Populate(generate);
  if (too_deep)
    return make_error(Reason::Unknown, "JSON nested deeper than " + std::to_string(limits.maximum_depth) +
                                           " arrays and objects at offset " +
                                           std::to_string(result.Offset()));
  if (result.IsError())
    return make_error(Reason::Unknown, "invalid JSON at offset " + std::to_string(result.Offset()) + ": " +
                                           rapidjson::GetParseError_En(result.Code()));
  return document;
}

}  // namespace myop::kube
