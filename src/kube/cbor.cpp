#include "kube/cbor.h"

#include <cbor.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "base/text.h"
#include "kube/json_parser.h"

namespace myop::kube {
namespace {

constexpr std::uint64_t kSelfDescribedTag = 55799;
constexpr std::uint64_t kExpectedBase64UrlTag = 21;
constexpr std::uint64_t kExpectedBase64Tag = 22;
constexpr std::uint64_t kExpectedBase16Tag = 23;

std::string hex_of(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) {
    text.push_back(kDigits[byte >> 4U]);
    text.push_back(kDigits[byte & 0x0fU]);
  }
  return text;
}

std::string base64url_of(std::string_view bytes) {
  std::string text = base::encode_base64(bytes);
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  while (!text.empty() && text.back() == '=') text.pop_back();
  return text;
}

// Receives libcbor's callbacks for one data item and builds its tree (or, without an allocator, only
// follows its structure to find where it ends).
class Builder {
 public:
  // `drop_managed_fields`: the value of "managedFields" in a map under "metadata" is not built.
  Builder(JsonAllocator* allocator, JsonValue* root, bool drop_managed_fields = false)
      : allocator_(allocator), root_(root), drop_managed_fields_(drop_managed_fields) {}

  bool done() const { return done_; }
  const std::string& error() const { return error_; }
  // Bytes of input left after the current token: no container reserves more entries than that.
  void set_bytes_left(std::size_t left) { bytes_left_ = left; }

  void unsigned_integer(std::uint64_t value) {
    JsonValue json;
    json.SetUint64(value);
    scalar(std::move(json));
  }

  void negative_integer(std::uint64_t encoded) {  // the value is -1 - encoded
    if (encoded > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return fail("an integer below the int64 range");
    JsonValue json;
    json.SetInt64(-1 - static_cast<std::int64_t>(encoded));
    scalar(std::move(json));
  }

  void bytes(std::string_view data, bool text) {
    // Nothing to build (finding an item's end, or inside a dropped value): any string will do.
    if (allocator_ == nullptr || skipping()) return scalar(JsonValue(rapidjson::StringRef("")));
    std::string encoded;
    std::string_view value = data;
    if (!text && tag_ == kExpectedBase64Tag) {
      encoded = base::encode_base64(data);
      value = encoded;
    } else if (!text && tag_ == kExpectedBase64UrlTag) {
      encoded = base64url_of(data);
      value = encoded;
    } else if (!text && tag_ == kExpectedBase16Tag) {
      encoded = hex_of(data);
      value = encoded;
    }
    scalar(JsonValue(value.data(), static_cast<rapidjson::SizeType>(value.size()), *allocator_));
  }

  void floating(double value) {
    if (!std::isfinite(value)) return fail("a NaN or infinite number (JSON has none)");
    JsonValue json;
    json.SetDouble(value);
    scalar(std::move(json));
  }

  void boolean(bool value) { scalar(JsonValue(value)); }
  void null() { scalar(JsonValue()); }
  void tag(std::uint64_t number) { tag_ = number == kSelfDescribedTag ? 0 : number; }
  void indefinite() { fail("an indefinite-length item (the API server writes definite lengths only)"); }

  void container(std::size_t size, bool map) {
    if (stack_.size() >= static_cast<std::size_t>(kMaximumJsonDepth))
      return fail("nested deeper than " + std::to_string(kMaximumJsonDepth) + " arrays and maps");
    // Every entry takes at least one byte (a map's two): a claimed size beyond what is left is a lie when
    // the input is the whole item (a tree is built only then; finding an item's end reads a prefix).
    if (allocator_ != nullptr && size > bytes_left_)
      return fail("a length of " + std::to_string(size) + " beyond the input's end");
    const bool metadata =
        map && !stack_.empty() && stack_.back().map && stack_.back().key.IsString() &&
        std::string_view(stack_.back().key.GetString(), stack_.back().key.GetStringLength()) == "metadata";
    JsonValue value(map ? rapidjson::kObjectType : rapidjson::kArrayType);
    // RapidJSON 1.1 reserves array slots only (a map grows as members arrive).
    if (allocator_ != nullptr && !map && !skipping())
      value.Reserve(static_cast<rapidjson::SizeType>(size), *allocator_);
    JsonValue* placed = place(std::move(value));
    if (placed == nullptr && !error_.empty()) return;
    if (size == 0) return item_done();
    stack_.push_back(Frame{placed, map ? size * 2 : size, map, metadata});
  }

 private:
  struct Frame {
    JsonValue* container;     // null when only following the structure (or dropping a value)
    std::uint64_t remaining;  // entries left (a map's keys and values each count one)
    bool map;
    bool metadata = false;    // a map placed under the key "metadata"
    bool drop_value = false;  // the value of the current key is not built
    JsonValue key{};
  };

  bool skipping() const { return !stack_.empty() && stack_.back().container == nullptr; }

  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  void scalar(JsonValue value) {
    if (!error_.empty()) return;
    if (!stack_.empty() && stack_.back().map && stack_.back().remaining % 2 == 0) {
      // A key.
      Frame& frame = stack_.back();
      if (allocator_ != nullptr && !value.IsString()) return fail("a map key that is not a string");
      frame.key = std::move(value);
      frame.drop_value =
          drop_managed_fields_ && frame.metadata && frame.container != nullptr &&
          std::string_view(frame.key.GetString(), frame.key.GetStringLength()) == "managedFields";
      --frame.remaining;
      tag_ = 0;
      return;
    }
    place(std::move(value));
    item_done();
  }

  // Puts a value where the structure says (root, array element, map value); returns where it landed.
  JsonValue* place(JsonValue value) {
    tag_ = 0;
    if (stack_.empty()) {
      if (root_ == nullptr) return nullptr;
      *root_ = std::move(value);
      return root_;
    }
    Frame& frame = stack_.back();
    if (frame.map && frame.remaining % 2 == 0) {
      fail("a map key that is not a string");
      return nullptr;
    }
    if (frame.container == nullptr) return nullptr;
    if (frame.drop_value) {
      frame.drop_value = false;
      return nullptr;  // a container dropped here gets a frame without one: its entries are not built
    }
    if (frame.map) {
      frame.container->AddMember(frame.key, value, *allocator_);
      return &(frame.container->MemberEnd() - 1)->value;
    }
    frame.container->PushBack(value, *allocator_);
    return &(*frame.container)[frame.container->Size() - 1];
  }

  // One entry of the innermost container is complete; closes the containers it completes.
  void item_done() {
    while (true) {
      if (stack_.empty()) {
        done_ = true;
        return;
      }
      Frame& frame = stack_.back();
      if (--frame.remaining > 0) return;
      stack_.pop_back();
    }
  }

  JsonAllocator* allocator_;
  JsonValue* root_;
  bool drop_managed_fields_;
  std::vector<Frame> stack_;
  std::uint64_t tag_ = 0;
  std::size_t bytes_left_ = 0;
  bool done_ = false;
  std::string error_;
};

Builder& builder_of(void* context) { return *static_cast<Builder*>(context); }

const cbor_callbacks& callbacks() {
  static const cbor_callbacks table = [] {
    cbor_callbacks c = cbor_empty_callbacks;
    c.uint8 = [](void* b, std::uint8_t v) { builder_of(b).unsigned_integer(v); };
    c.uint16 = [](void* b, std::uint16_t v) { builder_of(b).unsigned_integer(v); };
    c.uint32 = [](void* b, std::uint32_t v) { builder_of(b).unsigned_integer(v); };
    c.uint64 = [](void* b, std::uint64_t v) { builder_of(b).unsigned_integer(v); };
    c.negint8 = [](void* b, std::uint8_t v) { builder_of(b).negative_integer(v); };
    c.negint16 = [](void* b, std::uint16_t v) { builder_of(b).negative_integer(v); };
    c.negint32 = [](void* b, std::uint32_t v) { builder_of(b).negative_integer(v); };
    c.negint64 = [](void* b, std::uint64_t v) { builder_of(b).negative_integer(v); };
    c.byte_string = [](void* b, cbor_data data, std::size_t size) {
      builder_of(b).bytes(std::string_view(reinterpret_cast<const char*>(data), size), false);
    };
    c.string = [](void* b, cbor_data data, std::size_t size) {
      builder_of(b).bytes(std::string_view(reinterpret_cast<const char*>(data), size), true);
    };
    c.byte_string_start = [](void* b) { builder_of(b).indefinite(); };
    c.string_start = [](void* b) { builder_of(b).indefinite(); };
    c.indef_array_start = [](void* b) { builder_of(b).indefinite(); };
    c.indef_map_start = [](void* b) { builder_of(b).indefinite(); };
    c.indef_break = [](void* b) { builder_of(b).indefinite(); };
    c.array_start = [](void* b, std::size_t size) { builder_of(b).container(size, false); };
    c.map_start = [](void* b, std::size_t size) { builder_of(b).container(size, true); };
    c.tag = [](void* b, std::uint64_t number) { builder_of(b).tag(number); };
    c.float2 = [](void* b, float v) { builder_of(b).floating(v); };
    c.float4 = [](void* b, float v) { builder_of(b).floating(v); };
    c.float8 = [](void* b, double v) { builder_of(b).floating(v); };
    c.undefined = [](void* b) { builder_of(b).null(); };
    c.null = [](void* b) { builder_of(b).null(); };
    c.boolean = [](void* b, bool v) { builder_of(b).boolean(v); };
    return c;
  }();
  return table;
}

enum class Outcome { Complete, Incomplete, Malformed };

// Feeds tokens of `bytes` to `builder` until its item is complete; `consumed` is where it ended.
Outcome run(std::string_view bytes, Builder& builder, std::size_t& consumed, std::string& error) {
  consumed = 0;
  while (!builder.done()) {
    if (consumed >= bytes.size()) return Outcome::Incomplete;
    builder.set_bytes_left(bytes.size() - consumed);
    const cbor_decoder_result result =
        cbor_stream_decode(reinterpret_cast<cbor_data>(bytes.data() + consumed), bytes.size() - consumed,
                           &callbacks(), &builder);
    if (result.status == CBOR_DECODER_NEDATA) return Outcome::Incomplete;
    if (result.status != CBOR_DECODER_FINISHED) {
      error = "malformed CBOR at offset " + std::to_string(consumed);
      return Outcome::Malformed;
    }
    consumed += result.read;
    if (!builder.error().empty()) {
      error = "CBOR at offset " + std::to_string(consumed) + ": " + builder.error();
      return Outcome::Malformed;
    }
  }
  return Outcome::Complete;
}

Result<void> decode_into(std::string_view bytes, JsonAllocator& allocator, JsonValue& root,
                         bool drop_managed_fields = false) {
  Builder builder(&allocator, &root, drop_managed_fields);
  std::size_t consumed = 0;
  std::string error;
  switch (run(bytes, builder, consumed, error)) {
    case Outcome::Incomplete:
      return make_error(Reason::Unknown,
                        "truncated CBOR: " + std::to_string(bytes.size()) + " bytes end inside the item");
    case Outcome::Malformed:
      return make_error(Reason::Unknown, error);
    case Outcome::Complete:
      break;
  }
  if (consumed != bytes.size())
    return make_error(Reason::Unknown,
                      "CBOR: " + std::to_string(bytes.size() - consumed) + " bytes after the data item");
  return {};
}

}  // namespace

bool is_cbor_media_type(std::string_view content_type) {
  const std::string_view type = base::media_type(content_type);
  return type == kCborMediaType || type == "application/cbor-seq";
}

Result<rapidjson::Document> decode_cbor_document(std::string_view bytes) {
  rapidjson::Document document;
  auto decoded = decode_into(bytes, document.GetAllocator(), document);
  if (!decoded) return std::move(decoded).error();
  return document;
}

Result<Object> decode_cbor_object(std::string_view bytes, bool drop_managed_fields) {
  // Built in this thread's scratch pool, then copied into one of the exact size (maps grow in steps).
  ScratchPool scratch;
  JsonValue root;
  auto decoded = decode_into(bytes, scratch.allocator(), root, drop_managed_fields);
  if (!decoded) return std::move(decoded).error();
  return Object::copy_of(root);
}

Result<std::optional<std::size_t>> cbor_item_size(std::string_view bytes) {
  Builder builder(nullptr, nullptr);
  std::size_t consumed = 0;
  std::string error;
  switch (run(bytes, builder, consumed, error)) {
    case Outcome::Incomplete:
      return std::optional<std::size_t>();
    case Outcome::Malformed:
      return make_error(Reason::Unknown, error);
    case Outcome::Complete:
      break;
  }
  return std::optional<std::size_t>(consumed);
}

}  // namespace myop::kube
