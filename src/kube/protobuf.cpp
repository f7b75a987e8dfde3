#include "kube/protobuf.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "base/text.h"
#include "base/time_format.h"
#include "kube/json_parser.h"

// The descriptor set protoc compiled from third_party/kubernetes-proto (CMakeLists.txt embeds it).
extern const unsigned char myop_kubernetes_descriptor_set[];
extern const std::size_t myop_kubernetes_descriptor_set_size;
// third_party/kubernetes-proto/inline-fields.txt: "<message> <field number>" per line, and
// omit-empty-fields.txt: "<message> <field number> omitempty|omitzero" per line.
extern const unsigned char myop_kubernetes_inline_fields[];
extern const std::size_t myop_kubernetes_inline_fields_size;
extern const unsigned char myop_kubernetes_omit_empty_fields[];
extern const std::size_t myop_kubernetes_omit_empty_fields_size;

namespace myop::kube {
namespace {

namespace pb = google::protobuf;
using WireFormat = pb::internal::WireFormatLite;
using Input = pb::io::CodedInputStream;

constexpr std::string_view kMagic{"k8s\0", 4};

// Messages whose JSON is not their protobuf shape (their MarshalJSON methods in apimachinery).
enum class Special { None, Time, MicroTime, Duration, Quantity, IntOrString, FieldsV1, RawExtension };

struct MessagePlan;

struct FieldPlan {
  const pb::FieldDescriptor* field = nullptr;  // null: no field of this number (skipped)
  std::string_view name;                       // the descriptor's, which lives as long as the schema
  WireFormat::WireType wire_type = WireFormat::WIRETYPE_VARINT;
  bool repeated = false;
  bool map = false;
  bool managed_fields = false;    // ObjectMeta.managedFields
  bool inline_in_parent = false;  // Go embeds it: its members go into the parent's object
  // The JSON leaves it out when zero: a scalar (omitempty or omitzero) when 0, false or ""; a message
  // (omitzero only: encoding/json never omits a struct for omitempty) when it is encoded empty.
  bool omit_zero_scalar = false;
  bool omit_empty_message = false;
  const MessagePlan* message = nullptr;  // message fields; for maps, the entry
};

struct MessagePlan {
  const pb::Descriptor* descriptor = nullptr;
  Special special = Special::None;
  std::vector<FieldPlan> by_number;  // index: field number
  const FieldPlan* field(std::uint32_t number) const {
    return number < by_number.size() && by_number[number].field != nullptr ? &by_number[number] : nullptr;
  }
};

// The compiled-in schema: the descriptor pool and a decoding plan per message. Built once, never freed
// (member names in decoded objects point into it).
class Schema {
 public:
  Schema() {
    pb::FileDescriptorSet set;
    if (!set.ParseFromArray(myop_kubernetes_descriptor_set,
                            static_cast<int>(myop_kubernetes_descriptor_set_size))) {
      failure_ = "the built-in Kubernetes descriptor set does not parse";
      return;
    }
    // protoc --include_imports lists every file after the files it imports.
    for (const auto& file : set.file()) {
      if (pool_.BuildFile(file) == nullptr) {
        failure_ = "the built-in Kubernetes descriptor set does not build (" + file.name() + ")";
        return;
      }
      const pb::FileDescriptor* built = pool_.FindFileByName(file.name());
      for (int i = 0; i < built->message_type_count(); ++i) add_plans(built->message_type(i));
    }
    for (auto& [descriptor, plan] : plans_) link(plan);
    mark_fields(myop_kubernetes_inline_fields, myop_kubernetes_inline_fields_size,
                [](FieldPlan& field, std::string_view) { field.inline_in_parent = true; });
    mark_fields(myop_kubernetes_omit_empty_fields, myop_kubernetes_omit_empty_fields_size,
                [](FieldPlan& field, std::string_view how) {
                  field.omit_zero_scalar = true;
                  field.omit_empty_message = how == "omitzero";
                });
    check_special_shapes();
  }

  const std::string& failure() const { return failure_; }

  const MessagePlan* find(std::string_view full_name) const {
    return const_cast<Schema*>(this)->mutable_find(full_name);
  }

  // "apps/v1" + "Deployment" -> k8s.io.api.apps.v1.Deployment; "v1" + "Secret" -> k8s.io.api.core.v1.Secret.
  // A group's package is its first DNS label (coordination.k8s.io -> coordination). metav1 kinds the core
  // group serves (Status, WatchEvent) come from apimachinery's package.
  const MessagePlan* for_kind(std::string_view api_version, std::string_view kind) const {
    std::string_view group;
    std::string_view version = api_version;
    if (auto slash = api_version.find('/'); slash != std::string_view::npos) {
      group = api_version.substr(0, slash);
      version = api_version.substr(slash + 1);
    }
    if (version.empty() || kind.empty()) return nullptr;
    std::string package = "k8s.io.api.";
    package += group.empty() ? std::string_view("core") : group.substr(0, group.find('.'));
    package += ".";
    package += version;
    if (const MessagePlan* plan = find(package + "." + std::string(kind))) return plan;
    if (group.empty() || group == "meta.k8s.io")
      return find("k8s.io.apimachinery.pkg.apis.meta.v1." + std::string(kind));
    return nullptr;
  }

  const MessagePlan* unknown() const { return unknown_; }
  const MessagePlan* watch_event() const { return watch_event_; }

 private:
  MessagePlan* mutable_find(std::string_view full_name) {
    const pb::Descriptor* descriptor = pool_.FindMessageTypeByName(std::string(full_name));
    if (descriptor == nullptr) return nullptr;
    auto found = plans_.find(descriptor);
    return found == plans_.end() ? nullptr : &found->second;
  }

  void add_plans(const pb::Descriptor* descriptor) {
    MessagePlan& plan = plans_[descriptor];
    plan.descriptor = descriptor;
    plan.special = special_of(descriptor->full_name());
    for (int i = 0; i < descriptor->nested_type_count(); ++i) add_plans(descriptor->nested_type(i));
  }

  void link(MessagePlan& plan) {
    const pb::Descriptor* descriptor = plan.descriptor;
    int largest = 0;
    for (int i = 0; i < descriptor->field_count(); ++i)
      largest = std::max(largest, descriptor->field(i)->number());
    plan.by_number.resize(static_cast<std::size_t>(largest) + 1);
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const pb::FieldDescriptor* field = descriptor->field(i);
      FieldPlan& entry = plan.by_number[static_cast<std::size_t>(field->number())];
      entry.field = field;
      entry.name = field->name();
      entry.wire_type = WireFormat::WireTypeForFieldType(static_cast<WireFormat::FieldType>(field->type()));
      entry.repeated = field->is_repeated();
      entry.map = field->is_map();
      entry.managed_fields = descriptor->full_name() == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta" &&
                             field->name() == "managedFields";
      if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
        auto found = plans_.find(field->message_type());
        entry.message = found == plans_.end() ? nullptr : &found->second;
      }
    }
    if (descriptor->full_name() == "k8s.io.apimachinery.pkg.runtime.Unknown") unknown_ = &plan;
    if (descriptor->full_name() == "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent") watch_event_ = &plan;
  }

  // Applies `mark` to the field of each line "<message> <number> [word]" of an embedded list.
  template <typename Mark>
  void mark_fields(const unsigned char* data, std::size_t size, Mark mark) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::size_t start = 0;
    while (start < text.size() && failure_.empty()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(start, end - start);
      start = end + 1;
      if (line.empty()) continue;
      const std::size_t first_space = line.find(' ');
      const std::size_t second_space = line.find(' ', first_space + 1);
      MessagePlan* plan =
          first_space == std::string_view::npos ? nullptr : mutable_find(line.substr(0, first_space));
      const std::string_view number_text = first_space == std::string_view::npos
                                               ? std::string_view()
                                               : line.substr(first_space + 1, second_space - first_space - 1);
      std::uint32_t number = 0;
      for (char digit : number_text) number = number * 10 + static_cast<std::uint32_t>(digit - '0');
      if (plan == nullptr || number_text.empty() || plan->field(number) == nullptr) {
        failure_ = "the built-in list of JSON field rules names no field: " + std::string(line);
        return;
      }
      mark(plan->by_number[number],
           second_space == std::string_view::npos ? std::string_view() : line.substr(second_space + 1));
    }
  }

  static Special special_of(const std::string& name) {
    if (name == "k8s.io.apimachinery.pkg.apis.meta.v1.Time") return Special::Time;
    if (name == "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime") return Special::MicroTime;
    if (name == "k8s.io.apimachinery.pkg.apis.meta.v1.Duration") return Special::Duration;
    if (name == "k8s.io.apimachinery.pkg.api.resource.Quantity") return Special::Quantity;
    if (name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString") return Special::IntOrString;
    if (name == "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") return Special::FieldsV1;
    if (name == "k8s.io.apimachinery.pkg.runtime.RawExtension") return Special::RawExtension;
    return Special::None;
  }

  // The special decoders read these fields by number: a schema that moved one fails here, loudly, and
  // not as wrong values.
  void check_special_shapes() {
    struct Expected {
      const char* message;
      int number;
      const char* field;
      pb::FieldDescriptor::Type type;
    };
    static constexpr std::array<Expected, 13> expected{{
        {"k8s.io.apimachinery.pkg.apis.meta.v1.Time", 1, "seconds", pb::FieldDescriptor::TYPE_INT64},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.Time", 2, "nanos", pb::FieldDescriptor::TYPE_INT32},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", 1, "seconds", pb::FieldDescriptor::TYPE_INT64},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", 2, "nanos", pb::FieldDescriptor::TYPE_INT32},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.Duration", 1, "duration", pb::FieldDescriptor::TYPE_INT64},
        {"k8s.io.apimachinery.pkg.api.resource.Quantity", 1, "string", pb::FieldDescriptor::TYPE_STRING},
        {"k8s.io.apimachinery.pkg.util.intstr.IntOrString", 1, "type", pb::FieldDescriptor::TYPE_INT64},
        {"k8s.io.apimachinery.pkg.util.intstr.IntOrString", 2, "intVal", pb::FieldDescriptor::TYPE_INT32},
        {"k8s.io.apimachinery.pkg.util.intstr.IntOrString", 3, "strVal", pb::FieldDescriptor::TYPE_STRING},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", 1, "Raw", pb::FieldDescriptor::TYPE_BYTES},
        {"k8s.io.apimachinery.pkg.runtime.RawExtension", 1, "raw", pb::FieldDescriptor::TYPE_BYTES},
        {"k8s.io.apimachinery.pkg.runtime.Unknown", 2, "raw", pb::FieldDescriptor::TYPE_BYTES},
        {"k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent", 1, "type", pb::FieldDescriptor::TYPE_STRING},
    }};
    for (const Expected& want : expected) {
      const pb::Descriptor* descriptor = pool_.FindMessageTypeByName(want.message);
      const pb::FieldDescriptor* field =
          descriptor == nullptr ? nullptr : descriptor->FindFieldByNumber(want.number);
      if (field == nullptr || field->name() != want.field || field->type() != want.type) {
        failure_ = std::string("the built-in Kubernetes schema changed shape: ") + want.message + " field " +
                   std::to_string(want.number) + " is not " + want.field;
        return;
      }
    }
    if (unknown_ == nullptr || watch_event_ == nullptr)
      failure_ = "the built-in Kubernetes schema is incomplete";
  }

  pb::DescriptorPool pool_;
  std::unordered_map<const pb::Descriptor*, MessagePlan> plans_;  // nodes never move
  const MessagePlan* unknown_ = nullptr;
  const MessagePlan* watch_event_ = nullptr;
  std::string failure_;
};

const Schema& schema() {
  static const Schema* const instance = new Schema();  // never destroyed: decoded names point into it
  return *instance;
}

// The next length-delimited bytes, as a view into the input (which is one flat buffer).
bool read_bytes(Input& input, std::string_view& out) {
  int length = 0;
  if (!input.ReadVarintSizeAsInt(&length)) return false;
  const void* data = nullptr;
  int available = 0;
  input.GetDirectBufferPointerInline(&data, &available);
  if (length > available) return false;
  out = std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(length));
  return input.Skip(length);
}

Input input_of(std::string_view bytes) {
  return Input(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
}

// The varint and length-delimited fields 1 to 3 of a small message (the envelope, a WatchEvent, a time):
// the last value of each; other fields are skipped.
struct SmallFields {
  std::array<std::uint64_t, 4> numbers{};
  std::array<std::string_view, 4> bytes{};
  std::array<bool, 4> present{};
};
bool small_fields(std::string_view message, SmallFields& fields) {
  if (message.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;
  Input input = input_of(message);
  while (const std::uint32_t tag = input.ReadTag()) {
    const std::uint32_t number = WireFormat::GetTagFieldNumber(tag);
    const auto type = WireFormat::GetTagWireType(tag);
    if (number >= fields.numbers.size()) {
      if (!WireFormat::SkipField(&input, tag)) return false;
      continue;
    }
    fields.present[number] = true;
    if (type == WireFormat::WIRETYPE_VARINT) {
      if (!input.ReadVarint64(&fields.numbers[number])) return false;
    } else if (type == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      if (!read_bytes(input, fields.bytes[number])) return false;
    } else if (!WireFormat::SkipField(&input, tag)) {
      return false;
    }
  }
  return input.ConsumedEntireMessage();
}

// The envelope's parts, as views into the body.
struct Envelope {
  std::string_view api_version;
  std::string_view kind;
  std::string_view raw;
  std::string_view content_encoding;
};

std::optional<Envelope> parse_envelope(std::string_view body) {
  if (!body.starts_with(kMagic)) return std::nullopt;
  body.remove_prefix(kMagic.size());
  SmallFields fields;
  SmallFields type_meta;
  if (!small_fields(body, fields) || !small_fields(fields.bytes[1], type_meta)) return std::nullopt;
  return Envelope{type_meta.bytes[1], type_meta.bytes[2], fields.bytes[2], fields.bytes[3]};
}

class Decoder {
 public:
  Decoder(JsonAllocator& allocator, const ProtobufDecodeOptions& options)
      : allocator_(allocator), options_(options) {}

  // The object `raw` holds, of kind `plan`, into `out` (an object whose first members are apiVersion and
  // kind when given).
  Result<void> decode_top(const MessagePlan& plan, std::string_view raw, std::string_view api_version,
                          std::string_view kind, JsonValue& out) {
    if (raw.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      return make_error(Reason::Unknown, "protobuf message too large");
    Input input = input_of(raw);
    out.SetObject();
    if (!api_version.empty())
      out.AddMember(rapidjson::StringRef("apiVersion"), copy(api_version), allocator_);
    if (!kind.empty()) out.AddMember(rapidjson::StringRef("kind"), copy(kind), allocator_);
    // A list's items: the kind without "List" (the JSON of built-in lists has no TypeMeta per item).
    if (kind.size() > 4 && kind.ends_with("List")) {
      item_api_version_ = api_version;
      item_kind_ = kind.substr(0, kind.size() - 4);
    }
    if (!message_fields(plan, input, out, 0)) return failure();
    return {};
  }

  Error failure() const {
    return make_error(
        Reason::Unknown,
        "malformed protobuf: " + (error_.empty() ? std::string("truncated or invalid wire data") : error_));
  }

 private:
  JsonValue copy(std::string_view text) {
    return JsonValue(text.data(), static_cast<rapidjson::SizeType>(text.size()), allocator_);
  }

  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // The members of one message, up to the current limit.
  bool message_fields(const MessagePlan& plan, Input& input, JsonValue& out, int depth) {
    if (depth > kMaximumJsonDepth)
      return fail("nested deeper than " + std::to_string(kMaximumJsonDepth) + " messages");
    // Repeated fields and maps gather into one member; this remembers which (field number -> member).
    std::uint64_t seen = 0;
    while (true) {
      const std::uint32_t tag = input.ReadTag();
      if (tag == 0) return input.ConsumedEntireMessage() || fail({});
      const std::uint32_t number = WireFormat::GetTagFieldNumber(tag);
      const auto wire_type = WireFormat::GetTagWireType(tag);
      const FieldPlan* field = plan.field(number);
      if (field == nullptr || (field->managed_fields && options_.drop_managed_fields)) {
        if (!WireFormat::SkipField(&input, tag)) return fail({});
        continue;
      }
      const rapidjson::GenericStringRef<char> name(field->name.data(),
                                                   static_cast<rapidjson::SizeType>(field->name.size()));
      const bool first = number >= 64 || (seen & (std::uint64_t{1} << number)) == 0;
      if (number < 64) seen |= std::uint64_t{1} << number;
      if (field->inline_in_parent && !field->repeated && field->message != nullptr &&
          field->message->special == Special::None) {
        // Go's embedded struct (Volume's VolumeSource, Probe's ProbeHandler): its JSON members are the
        // parent's own.
        std::string_view bytes;
        if (wire_type != WireFormat::WIRETYPE_LENGTH_DELIMITED || !read_bytes(input, bytes)) return fail({});
        Input nested = input_of(bytes);
        if (!message_fields(*field->message, nested, out, depth + 1)) return false;
        continue;
      }
      if (!field->repeated) {
        JsonValue value;
        if (field->omit_empty_message && field->message != nullptr) {
          // omitzero: an unset time (encoded empty) is absent, as in the JSON.
          std::string_view bytes;
          if (wire_type != WireFormat::WIRETYPE_LENGTH_DELIMITED || !read_bytes(input, bytes))
            return fail({});
          if (bytes.empty()) continue;
          if (!message_value(*field->message, bytes, value, depth + 1, false)) return false;
        } else {
          if (!single_value(*field, wire_type, input, value, depth)) return false;
          if (field->omit_zero_scalar && field->message == nullptr && is_zero(value)) continue;
        }
        if (!first) erase_member(out, field->name);  // a repeated singular field: the last one wins
        out.AddMember(name, value, allocator_);
        continue;
      }
      JsonValue* member = first ? nullptr : find_member(out, field->name);
      if (member == nullptr) {
        out.AddMember(name, JsonValue(field->map ? rapidjson::kObjectType : rapidjson::kArrayType),
                      allocator_);
        member = &(out.MemberEnd() - 1)->value;
      }
      if (field->map) {
        if (!map_entry(*field, wire_type, input, *member, depth)) return false;
      } else if (wire_type == WireFormat::WIRETYPE_LENGTH_DELIMITED &&
                 field->wire_type != WireFormat::WIRETYPE_LENGTH_DELIMITED) {
        if (!packed_values(*field, input, *member)) return false;
      } else {
        JsonValue value;
        const bool item = depth == 0 && !item_kind_.empty() && field->name == "items";
        if (!single_value(*field, wire_type, input, value, depth, item)) return false;
        member->PushBack(value, allocator_);
      }
    }
  }

  bool map_entry(const FieldPlan& field, WireFormat::WireType wire_type, Input& input, JsonValue& out,
                 int depth) {
    std::string_view bytes;
    if (wire_type != WireFormat::WIRETYPE_LENGTH_DELIMITED || field.message == nullptr ||
        !read_bytes(input, bytes))
      return fail("map " + std::string(field.name) + " is not a length-delimited entry");
    Input entry = input_of(bytes);
    const FieldPlan* key_field = field.message->field(1);
    const FieldPlan* value_field = field.message->field(2);
    if (key_field == nullptr || value_field == nullptr) return fail("map entry without key or value");
    JsonValue key;
    JsonValue value;
    bool has_value = false;
    while (const std::uint32_t tag = entry.ReadTag()) {
      const std::uint32_t number = WireFormat::GetTagFieldNumber(tag);
      const auto type = WireFormat::GetTagWireType(tag);
      if (number == 1) {
        if (!single_value(*key_field, type, entry, key, depth)) return false;
      } else if (number == 2) {
        if (!single_value(*value_field, type, entry, value, depth)) return false;
        has_value = true;
      } else if (!WireFormat::SkipField(&entry, tag)) {
        return fail({});
      }
    }
    if (!entry.ConsumedEntireMessage()) return fail({});
    if (!key.IsString()) {
      if (!key.IsNull() && !key.IsNumber())
        return fail("map " + std::string(field.name) + " with an unusable key");
      std::string text = key.IsNull()    ? std::string()
                         : key.IsInt64() ? std::to_string(key.GetInt64())
                                         : std::to_string(key.GetUint64());
      key = copy(text);
    }
    if (!has_value) default_value(*value_field, value);
    out.AddMember(key, value, allocator_);
    return true;
  }

  // An absent map value: what Go's zero value encodes to.
  void default_value(const FieldPlan& field, JsonValue& out) {
    switch (field.field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING:
        out.SetString("", 0, allocator_);
        break;
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        out.SetObject();
        break;
      case pb::FieldDescriptor::CPPTYPE_BOOL:
        out.SetBool(false);
        break;
      default:
        out.SetInt(0);
    }
  }

  bool packed_values(const FieldPlan& field, Input& input, JsonValue& array) {
    int length = 0;
    if (!input.ReadVarintSizeAsInt(&length)) return fail({});
    const Input::Limit limit = input.PushLimit(length);
    while (input.BytesUntilLimit() > 0) {
      JsonValue value;
      if (!scalar(field, input, value)) return false;
      array.PushBack(value, allocator_);
    }
    input.PopLimit(limit);
    return true;
  }

  // One value of `field`; `list_item` starts an object with the list's item apiVersion and kind.
  bool single_value(const FieldPlan& field, WireFormat::WireType wire_type, Input& input, JsonValue& out,
                    int depth, bool list_item = false) {
    if (wire_type != field.wire_type)
      return fail("field " + std::string(field.name) + " of " + field.field->containing_type()->name() +
                  " has wire type " + std::to_string(wire_type) + ", expected " +
                  std::to_string(field.wire_type));
    if (field.message == nullptr) return scalar(field, input, out);
    std::string_view bytes;
    if (!read_bytes(input, bytes)) return fail({});
    return message_value(*field.message, bytes, out, depth + 1, list_item);
  }

  bool message_value(const MessagePlan& plan, std::string_view bytes, JsonValue& out, int depth,
                     bool list_item) {
    if (plan.special != Special::None) return special(plan, bytes, out, depth);
    Input nested = input_of(bytes);
    out.SetObject();
    if (list_item) {
      out.AddMember(rapidjson::StringRef("apiVersion"), copy(item_api_version_), allocator_);
      out.AddMember(rapidjson::StringRef("kind"), copy(item_kind_), allocator_);
    }
    return message_fields(plan, nested, out, depth);
  }

  static bool is_zero(const JsonValue& value) {
    if (value.IsString()) return value.GetStringLength() == 0;
    if (value.IsBool()) return !value.GetBool();
    if (value.IsInt64()) return value.GetInt64() == 0;
    if (value.IsUint64()) return value.GetUint64() == 0;
    if (value.IsDouble()) return value.GetDouble() == 0;
    return false;
  }

  bool scalar(const FieldPlan& field, Input& input, JsonValue& out) {
    using Type = pb::FieldDescriptor::Type;
    switch (field.field->type()) {
      case Type::TYPE_INT64: {
        std::uint64_t value = 0;
        if (!input.ReadVarint64(&value)) return fail({});
        out.SetInt64(static_cast<std::int64_t>(value));
        return true;
      }
      case Type::TYPE_UINT64: {
        std::uint64_t value = 0;
        if (!input.ReadVarint64(&value)) return fail({});
        out.SetUint64(value);
        return true;
      }
      case Type::TYPE_INT32:
      case Type::TYPE_ENUM: {
        std::uint64_t value = 0;  // negative int32s are sign-extended to ten bytes
        if (!input.ReadVarint64(&value)) return fail({});
        out.SetInt(static_cast<std::int32_t>(static_cast<std::int64_t>(value)));
        return true;
      }
      case Type::TYPE_UINT32: {
        std::uint32_t value = 0;
        if (!input.ReadVarint32(&value)) return fail({});
        out.SetUint(value);
        return true;
      }
      case Type::TYPE_SINT32: {
        std::uint32_t value = 0;
        if (!input.ReadVarint32(&value)) return fail({});
        out.SetInt(WireFormat::ZigZagDecode32(value));
        return true;
      }
      case Type::TYPE_SINT64: {
        std::uint64_t value = 0;
        if (!input.ReadVarint64(&value)) return fail({});
        out.SetInt64(WireFormat::ZigZagDecode64(value));
        return true;
      }
      case Type::TYPE_BOOL: {
        std::uint64_t value = 0;
        if (!input.ReadVarint64(&value)) return fail({});
        out.SetBool(value != 0);
        return true;
      }
      case Type::TYPE_FIXED32:
      case Type::TYPE_SFIXED32:
      case Type::TYPE_FLOAT: {
        std::uint32_t bits = 0;
        if (!input.ReadLittleEndian32(&bits)) return fail({});
        if (field.field->type() == Type::TYPE_FLOAT) {
          out.SetDouble(static_cast<double>(std::bit_cast<float>(bits)));
        } else if (field.field->type() == Type::TYPE_SFIXED32) {
          out.SetInt(static_cast<std::int32_t>(bits));
        } else {
          out.SetUint(bits);
        }
        return true;
      }
      case Type::TYPE_FIXED64:
      case Type::TYPE_SFIXED64:
      case Type::TYPE_DOUBLE: {
        std::uint64_t bits = 0;
        if (!input.ReadLittleEndian64(&bits)) return fail({});
        if (field.field->type() == Type::TYPE_DOUBLE) {
          out.SetDouble(std::bit_cast<double>(bits));
        } else if (field.field->type() == Type::TYPE_SFIXED64) {
          out.SetInt64(static_cast<std::int64_t>(bits));
        } else {
          out.SetUint64(bits);
        }
        return true;
      }
      case Type::TYPE_STRING: {
        std::string_view text;
        if (!read_bytes(input, text)) return fail({});
        out = copy(text);
        return true;
      }
      case Type::TYPE_BYTES: {
        std::string_view bytes;
        if (!read_bytes(input, bytes)) return fail({});
        out = copy(base::encode_base64(bytes));
        return true;
      }
      case Type::TYPE_MESSAGE:
      case Type::TYPE_GROUP:
        break;
    }
    return fail("field " + std::string(field.name) + " has an unsupported type");
  }

  bool special(const MessagePlan& plan, std::string_view bytes, JsonValue& out, int depth) {
    SmallFields fields;
    if (!small_fields(bytes, fields)) return fail("malformed " + plan.descriptor->name());
    switch (plan.special) {
      case Special::Time:
      case Special::MicroTime: {
        // An unset time is written as an empty message (apimachinery's time_proto.go): JSON null.
        if (bytes.empty()) {
          out.SetNull();
          return true;
        }
        const auto seconds = static_cast<std::int64_t>(fields.numbers[1]);
        const auto nanos = static_cast<std::int32_t>(static_cast<std::int64_t>(fields.numbers[2]));
        const base::WallTime time{std::chrono::duration_cast<base::WallTime::duration>(
            std::chrono::seconds(seconds) + std::chrono::nanoseconds(nanos))};
        out =
            copy(plan.special == Special::Time ? base::format_rfc3339(time) : base::format_micro_time(time));
        return true;
      }
      case Special::Duration:
        out = copy(go_duration_string(static_cast<std::int64_t>(fields.numbers[1])));
        return true;
      case Special::Quantity:
        out = copy(fields.bytes[1]);
        return true;
      case Special::IntOrString:
        if (fields.numbers[1] == 1) {
          out = copy(fields.bytes[3]);
        } else {
          out.SetInt(static_cast<std::int32_t>(static_cast<std::int64_t>(fields.numbers[2])));
        }
        return true;
      case Special::FieldsV1:
      case Special::RawExtension:
        return embedded(fields.present[1] ? std::optional(fields.bytes[1]) : std::nullopt, out, depth);
      case Special::None:
        break;
    }
    return fail("unexpected special type");
  }

  // FieldsV1.Raw and RawExtension.raw: JSON text (or, for a RawExtension, an enveloped protobuf object).
  bool embedded(std::optional<std::string_view> raw, JsonValue& out, int depth) {
    if (!raw || raw->empty()) {
      out.SetNull();
      return true;
    }
    if (raw->starts_with(kMagic)) {
      auto envelope = parse_envelope(*raw);
      const MessagePlan* plan = envelope ? schema().for_kind(envelope->api_version, envelope->kind) : nullptr;
      if (plan == nullptr) return fail("an embedded protobuf object of an unknown kind");
      Decoder inner(allocator_, options_);
      if (!inner.decode_top(*plan, envelope->raw, envelope->api_version, envelope->kind, out).ok())
        return fail(inner.error_);
      return true;
    }
    auto document = parse_json_document(*raw, JsonLimits{kMaximumObjectJsonBytes, kMaximumJsonDepth - depth},
                                        &allocator_);
    if (!document) return fail("embedded JSON: " + document.error().message);
    out = std::move(static_cast<JsonValue&>(document.value()));
    return true;
  }

  JsonAllocator& allocator_;
  const ProtobufDecodeOptions& options_;
  std::string_view item_api_version_;
  std::string_view item_kind_;
  std::string error_;
};

Result<const Schema*> ready_schema() {
  const Schema& built = schema();
  if (!built.failure().empty()) return make_error(Reason::Unknown, built.failure());
  return &built;
}

// The envelope of `body` and the plan of its kind.
Result<std::pair<Envelope, const MessagePlan*>> open_envelope(std::string_view body) {
  auto ready = ready_schema();
  if (!ready) return std::move(ready).error();
  if (!body.starts_with(kMagic))
    return make_error(Reason::Unknown, "malformed protobuf: the answer does not start with the k8s magic");
  auto envelope = parse_envelope(body);
  if (!envelope)
    return make_error(Reason::Unknown, "malformed protobuf: the runtime.Unknown envelope does not parse");
  if (!envelope->content_encoding.empty())
    return make_error(Reason::Unknown, "protobuf: unsupported contentEncoding \"" +
                                           std::string(envelope->content_encoding) + "\"");
  const MessagePlan* plan = ready.value()->for_kind(envelope->api_version, envelope->kind);
  if (plan == nullptr)
    return make_error(Reason::Unknown, "protobuf: no built-in schema for " +
                                           std::string(envelope->api_version) + " " +
                                           std::string(envelope->kind));
  return std::pair{*envelope, plan};
}

}  // namespace

bool is_protobuf_media_type(std::string_view content_type) {
  return base::media_type(content_type) == kProtobufMediaType;
}

bool protobuf_schema_known(std::string_view api_version, std::string_view kind) {
  auto ready = ready_schema();
  return ready.ok() && ready.value()->for_kind(api_version, kind) != nullptr;
}

Result<rapidjson::Document> decode_protobuf_document(std::string_view body,
                                                     const ProtobufDecodeOptions& options) {
  auto opened = open_envelope(body);
  if (!opened) return std::move(opened).error();
  const auto& [envelope, plan] = opened.value();
  rapidjson::Document document;
  Decoder decoder(document.GetAllocator(), options);
  auto decoded = decoder.decode_top(*plan, envelope.raw, envelope.api_version, envelope.kind, document);
  if (!decoded) return std::move(decoded).error();
  return document;
}

Result<Object> decode_protobuf_object(std::string_view body, const ProtobufDecodeOptions& options) {
  auto opened = open_envelope(body);
  if (!opened) return std::move(opened).error();
  const auto& [envelope, plan] = opened.value();
  // Built member by member, a tree's objects and arrays grow in steps (RapidJSON 1.1 reserves no
  // members), leaving about half its pool unused: it is built in a scratch pool that every decode of
  // this thread reuses, then copied into one of the exact size (ScratchPool, kube/object.h).
  ScratchPool scratch;
  JsonValue root;
  Decoder decoder(scratch.allocator(), options);
  auto decoded = decoder.decode_top(*plan, envelope.raw, envelope.api_version, envelope.kind, root);
  if (!decoded) return std::move(decoded).error();
  return Object::copy_of(root);
}

Result<ProtobufWatchEvent> decode_protobuf_watch_event(std::string_view frame,
                                                       const ProtobufDecodeOptions& options) {
  auto ready = ready_schema();
  if (!ready) return std::move(ready).error();
  // The stream serializer writes the WatchEvent without the envelope; accept one anyway.
  if (auto envelope = parse_envelope(frame)) frame = envelope->raw;
  // WatchEvent{type = 1, object = 2}; the object is a RawExtension whose raw (1) is the enveloped object.
  SmallFields event;
  SmallFields extension;
  if (!small_fields(frame, event) || !small_fields(event.bytes[2], extension))
    return make_error(Reason::Unknown, "malformed protobuf watch event: truncated or invalid wire data");
  std::string type(event.bytes[1]);
  const std::string_view object = extension.bytes[1];
  if (type.empty()) return make_error(Reason::Unknown, "malformed protobuf watch event: no type");
  if (object.empty()) return make_error(Reason::Unknown, "malformed protobuf watch event: no object");
  auto decoded = decode_protobuf_object(object, options);
  if (!decoded) {
    Error error = std::move(decoded).error();
    error.message = "watch event " + type + ": " + error.message;
    return error;
  }
  return ProtobufWatchEvent{std::move(type), std::move(decoded).value()};
}

std::string go_duration_string(std::int64_t nanoseconds) {
  // A port of Go's time.Duration.String.
  if (nanoseconds == 0) return "0s";
  const bool negative = nanoseconds < 0;
  std::uint64_t u = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(nanoseconds)
                             : static_cast<std::uint64_t>(nanoseconds);
  std::array<char, 32> buffer{};
  std::size_t w = buffer.size();
  // Writes the fraction of v / 10^precision, omitting trailing zeros; returns v / 10^precision.
  auto fraction = [&](std::uint64_t v, int precision) {
    bool print = false;
    for (int i = 0; i < precision; ++i) {
      const std::uint64_t digit = v % 10;
      print = print || digit != 0;
      if (print) buffer[--w] = static_cast<char>('0' + digit);
      v /= 10;
    }
    if (print) buffer[--w] = '.';
    return v;
  };
  auto integer = [&](std::uint64_t v) {
    if (v == 0) {
      buffer[--w] = '0';
      return;
    }
    while (v > 0) {
      buffer[--w] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
  };
  if (u < 1'000'000'000) {
    // Under a second: ns, us or ms with a fraction.
    int precision = 0;
    buffer[--w] = 's';
    if (u < 1'000) {
      buffer[--w] = 'n';
    } else if (u < 1'000'000) {
      precision = 3;
      const std::string_view micro = "\xc2\xb5";  // U+00B5, as Go writes it
      w -= micro.size();
      std::memcpy(&buffer[w], micro.data(), micro.size());
    } else {
      precision = 6;
      buffer[--w] = 'm';
    }
    u = fraction(u, precision);
    integer(u);
  } else {
    buffer[--w] = 's';
    u = fraction(u, 9);
    integer(u % 60);
    u /= 60;
    if (u > 0) {
      buffer[--w] = 'm';
      integer(u % 60);
      u /= 60;
      if (u > 0) {
        buffer[--w] = 'h';
        integer(u);
      }
    }
  }
  if (negative) buffer[--w] = '-';
  return std::string(&buffer[w], buffer.size() - w);
}

}  // namespace myop::kube
