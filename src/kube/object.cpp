#include "kube/object.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

namespace myop::kube {
namespace {

using JsonDocument = rapidjson::GenericDocument<rapidjson::UTF8<>, JsonAllocator, rapidjson::CrtAllocator>;

JsonValue string_reference(std::string_view text) {
  return JsonValue(rapidjson::StringRef(text.data(), static_cast<rapidjson::SizeType>(text.size())));
}

JsonValue copied_string(std::string_view text, JsonAllocator& allocator) {
  return JsonValue(text.data(), static_cast<rapidjson::SizeType>(text.size()), allocator);
}

std::string_view string_of(const JsonValue* value) {
  if (value == nullptr || !value->IsString()) return {};
  return {value->GetString(), value->GetStringLength()};
}

bool bool_of(const JsonValue* value) { return value != nullptr && value->IsBool() && value->GetBool(); }

std::map<std::string, std::string, std::less<>> string_map_of(const JsonValue* value) {
  std::map<std::string, std::string, std::less<>> result;
  if (value == nullptr || !value->IsObject()) return result;
  for (const auto& member : value->GetObject()) {
    if (!member.value.IsString()) continue;
    result.emplace(std::string(member.name.GetString(), member.name.GetStringLength()),
                   std::string(member.value.GetString(), member.value.GetStringLength()));
  }
  return result;
}

// Forwards SAX events to a document but always asks it to copy strings, so the copy never points into
// the source's buffers (RapidJSON shares "const" strings otherwise).
class CopyingHandler {
 public:
  explicit CopyingHandler(JsonDocument& target) : target_(target) {}
  bool Null() { return target_.Null(); }
  bool Bool(bool value) { return target_.Bool(value); }
  bool Int(int value) { return target_.Int(value); }
  bool Uint(unsigned value) { return target_.Uint(value); }
  bool Int64(std::int64_t value) { return target_.Int64(value); }
  bool Uint64(std::uint64_t value) { return target_.Uint64(value); }
  bool Double(double value) { return target_.Double(value); }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    return target_.RawNumber(text, length, true);
  }
  bool String(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    return target_.String(text, length, true);
  }
  bool StartObject() { return target_.StartObject(); }
  bool Key(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    return target_.Key(text, length, true);
  }
  bool EndObject(rapidjson::SizeType count) { return target_.EndObject(count); }
  bool StartArray() { return target_.StartArray(); }
  bool EndArray(rapidjson::SizeType count) { return target_.EndArray(count); }

 private:
  JsonDocument& target_;
};

std::size_t align8(std::size_t bytes) { return (bytes + 7) & ~static_cast<std::size_t>(7); }

// Pool bytes a copy of `value` needs: children arrays plus strings too long to be stored inline.
std::size_t pool_bytes_needed(const JsonValue& value) {
  constexpr std::size_t inline_string_limit = 13;  // RapidJSON's short-string capacity on 64-bit
  auto string_bytes = [](const JsonValue& text) {
    return text.GetStringLength() > inline_string_limit ? align8(text.GetStringLength() + 1) : 0;
  };
  switch (value.GetType()) {
    case rapidjson::kObjectType: {
      std::size_t bytes = align8(value.MemberCount() * sizeof(JsonValue::Member));
      for (const auto& member : value.GetObject())
        bytes += string_bytes(member.name) + pool_bytes_needed(member.value);
      return bytes;
    }
    case rapidjson::kArrayType: {
      std::size_t bytes = align8(value.Size() * sizeof(JsonValue));
      for (const auto& element : value.GetArray()) bytes += pool_bytes_needed(element);
      return bytes;
    }
    case rapidjson::kStringType:
      return string_bytes(value);
    default:
      return 0;
  }
}

}  // namespace

const JsonValue* find_member(const JsonValue& object, std::string_view key) {
  if (!object.IsObject()) return nullptr;
  auto found = object.FindMember(string_reference(key));
  return found == object.MemberEnd() ? nullptr : &found->value;
}

bool erase_member(JsonValue& object, std::string_view key) {
  return object.IsObject() && object.EraseMember(string_reference(key));
}

JsonValue* find_member(JsonValue& object, std::string_view key) {
  if (!object.IsObject()) return nullptr;
  auto found = object.FindMember(string_reference(key));
  return found == object.MemberEnd() ? nullptr : &found->value;
}

std::string string_at(const JsonValue& object, std::initializer_list<std::string_view> path) {
  const JsonValue* value = ObjectView(object).find(path);
  if (value == nullptr || !value->IsString()) return {};
  return std::string(value->GetString(), value->GetStringLength());
}

JsonValue json_string(std::string_view text, JsonAllocator& allocator) {
  return JsonValue(text.data(), static_cast<rapidjson::SizeType>(text.size()), allocator);
}

std::string to_json_string(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

JsonValue deep_copy_value(const JsonValue& source, JsonAllocator& allocator) {
  JsonDocument document(&allocator);
  auto generator = [&source](JsonDocument& target) {
    CopyingHandler handler(target);
    return source.Accept(handler);
  };
  document.Populate(generator);
  JsonValue result;
  result = static_cast<JsonValue&>(document);  // moves the root; the strings already live in `allocator`
  return result;
}

// ---- ObjectView ----

std::string_view ObjectView::api_version() const { return string_of(find({"apiVersion"})); }
std::string_view ObjectView::kind() const { return string_of(find({"kind"})); }
std::string_view ObjectView::name() const { return string_of(find({"metadata", "name"})); }
std::string_view ObjectView::namespace_name() const { return string_of(find({"metadata", "namespace"})); }
std::string_view ObjectView::uid() const { return string_of(find({"metadata", "uid"})); }
std::string_view ObjectView::resource_version() const {
  return string_of(find({"metadata", "resourceVersion"}));
}
std::string_view ObjectView::creation_timestamp() const {
  return string_of(find({"metadata", "creationTimestamp"}));
}

std::int64_t ObjectView::generation() const {
  const JsonValue* generation = find({"metadata", "generation"});
  if (generation == nullptr || !generation->IsInt64()) return 0;
  return generation->GetInt64();
}

std::optional<std::string_view> ObjectView::label(std::string_view key) const {
  const JsonValue* labels = find({"metadata", "labels"});
  const JsonValue* value = labels == nullptr ? nullptr : find_member(*labels, key);
  if (value == nullptr || !value->IsString()) return std::nullopt;
  return string_of(value);
}

std::map<std::string, std::string, std::less<>> ObjectView::labels() const {
  return string_map_of(find({"metadata", "labels"}));
}

std::optional<std::string_view> ObjectView::annotation(std::string_view key) const {
  const JsonValue* annotations = find({"metadata", "annotations"});
  const JsonValue* value = annotations == nullptr ? nullptr : find_member(*annotations, key);
  if (value == nullptr || !value->IsString()) return std::nullopt;
  return string_of(value);
}

std::map<std::string, std::string, std::less<>> ObjectView::annotations() const {
  return string_map_of(find({"metadata", "annotations"}));
}

std::vector<OwnerReference> ObjectView::owner_references() const {
  std::vector<OwnerReference> result;
  const JsonValue* references = find({"metadata", "ownerReferences"});
  if (references == nullptr || !references->IsArray()) return result;
  for (const auto& reference : references->GetArray()) {
    if (!reference.IsObject()) continue;
    OwnerReference owner;
    owner.api_version = std::string(string_of(find_member(reference, "apiVersion")));
    owner.kind = std::string(string_of(find_member(reference, "kind")));
    owner.name = std::string(string_of(find_member(reference, "name")));
    owner.uid = std::string(string_of(find_member(reference, "uid")));
    owner.controller = bool_of(find_member(reference, "controller"));
    owner.block_owner_deletion = bool_of(find_member(reference, "blockOwnerDeletion"));
    result.push_back(std::move(owner));
  }
  return result;
}

std::optional<OwnerReference> ObjectView::controller_owner() const {
  for (auto& owner : owner_references()) {
    if (owner.controller) return std::move(owner);
  }
  return std::nullopt;
}

std::vector<std::string_view> ObjectView::finalizers() const {
  std::vector<std::string_view> result;
  const JsonValue* finalizers = find({"metadata", "finalizers"});
  if (finalizers == nullptr || !finalizers->IsArray()) return result;
  for (const auto& finalizer : finalizers->GetArray()) {
    if (finalizer.IsString()) result.push_back(string_of(&finalizer));
  }
  return result;
}

bool ObjectView::has_finalizer(std::string_view finalizer) const {
  const auto all = finalizers();
  return std::find(all.begin(), all.end(), finalizer) != all.end();
}

std::optional<std::string_view> ObjectView::deletion_timestamp() const {
  const JsonValue* timestamp = find({"metadata", "deletionTimestamp"});
  if (timestamp == nullptr || !timestamp->IsString()) return std::nullopt;
  return string_of(timestamp);
}

const JsonValue* ObjectView::find(std::initializer_list<std::string_view> path) const {
  const JsonValue* current = value_;
  for (std::string_view key : path) {
    current = find_member(*current, key);
    if (current == nullptr) return nullptr;
  }
  return current;
}

// ---- Object ----

Object::Object(std::size_t chunk_size)
    : allocator_(std::make_unique<JsonAllocator>(std::max<std::size_t>(chunk_size, 64))),
      root_(rapidjson::kObjectType) {}

Object::Object(std::unique_ptr<JsonAllocator> allocator, JsonValue&& value)
    : allocator_(std::move(allocator)), root_(std::move(value)) {}

Object::Object(Object&& other) noexcept
    : allocator_(std::move(other.allocator_)), root_(std::move(other.root_)) {}

Object& Object::operator=(Object&& other) noexcept {
  if (this != &other) {
    root_ = std::move(other.root_);  // before the allocator, whose pool the old root may live in
    allocator_ = std::move(other.allocator_);
  }
  return *this;
}

Result<Object> Object::parse(std::string_view json, const JsonLimits& limits, std::size_t chunk_size) {
  if (chunk_size == kAutoChunkSize) {
    chunk_size = std::clamp<std::size_t>(2 * json.size() + 256, kSmallChunkSize, kLargestAutoChunkSize);
  }
  auto allocator = std::make_unique<JsonAllocator>(chunk_size);
  auto document = parse_json_document(json, limits, allocator.get());
  if (!document) return std::move(document).error();
  JsonValue root;
  root = static_cast<JsonValue&>(document.value());
  return Object(std::move(allocator), std::move(root));
}

Object Object::copy_of(const JsonValue& value, std::size_t chunk_size) {
  if (chunk_size == kAutoChunkSize) {
    chunk_size = std::max<std::size_t>(pool_bytes_needed(value), 64);
  }
  auto allocator = std::make_unique<JsonAllocator>(chunk_size);
  JsonValue copy = deep_copy_value(value, *allocator);
  return Object(std::move(allocator), std::move(copy));
}

namespace {
constexpr std::size_t kScratchBytes = std::size_t{64} * 1024;
struct ThreadScratch {
  // Not zeroed: a thread makes resident only the pages its trees reach.
  std::unique_ptr<char[]> buffer = std::make_unique_for_overwrite<char[]>(kScratchBytes);
  JsonAllocator allocator{buffer.get(), kScratchBytes, kScratchBytes};
  bool in_use = false;
};
// On the heap, made on the thread's first ScratchPool. A thread_local ThreadScratch would put its 64 KiB
// in the static TLS block of every thread of the process, zeroed by glibc when the thread starts: 64 KiB
// resident in each HTTP server, timer and signal thread that never decodes anything.
ThreadScratch& thread_scratch() {
  thread_local std::unique_ptr<ThreadScratch> scratch;
  if (!scratch) scratch = std::make_unique<ThreadScratch>();
  return *scratch;
}
}  // namespace

ScratchPool::ScratchPool() {
  ThreadScratch& scratch = thread_scratch();
  if (scratch.in_use) throw std::logic_error("ScratchPool: one at a time per thread");
  scratch.in_use = true;
  allocator_ = &scratch.allocator;
}

ScratchPool::~ScratchPool() {
  ThreadScratch& scratch = thread_scratch();
  scratch.allocator.Clear();  // keeps the thread's buffer, frees any chunk beyond it
  scratch.in_use = false;
}

Object Object::adopt(std::unique_ptr<JsonAllocator> allocator, JsonValue&& value) {
  return Object(std::move(allocator), std::move(value));
}

std::size_t Object::allocated_bytes() const { return allocator_ == nullptr ? 0 : allocator_->Capacity(); }

void Object::set_member(JsonValue& parent, std::string_view key, const JsonValue& value) {
  JsonValue copy = deep_copy_value(value, *allocator_);
  if (JsonValue* existing = find_member(parent, key)) {
    *existing = copy;
    return;
  }
  parent.AddMember(copied_string(key, *allocator_), copy, *allocator_);
}

void Object::set_string_member(JsonValue& parent, std::string_view key, std::string_view value) {
  JsonValue copy = copied_string(value, *allocator_);
  if (JsonValue* existing = find_member(parent, key)) {
    *existing = copy;
    return;
  }
  parent.AddMember(copied_string(key, *allocator_), copy, *allocator_);
}

JsonValue& Object::metadata() {
  if (!root_.IsObject()) root_.SetObject();
  JsonValue* metadata = find_member(root_, "metadata");
  if (metadata != nullptr && metadata->IsObject()) return *metadata;
  JsonValue empty(rapidjson::kObjectType);
  set_member(root_, "metadata", empty);
  return *find_member(root_, "metadata");
}

JsonValue& Object::metadata_map(std::string_view field) {
  JsonValue& parent = metadata();
  JsonValue* map = find_member(parent, field);
  if (map != nullptr && map->IsObject()) return *map;
  JsonValue empty(rapidjson::kObjectType);
  set_member(parent, field, empty);
  return *find_member(parent, field);
}

void Object::set_name(std::string_view name) { set_string_member(metadata(), "name", name); }
void Object::set_namespace_name(std::string_view namespace_name) {
  set_string_member(metadata(), "namespace", namespace_name);
}
void Object::set_resource_version(std::string_view resource_version) {
  set_string_member(metadata(), "resourceVersion", resource_version);
}

void Object::set_label(std::string_view key, std::string_view value) {
  set_string_member(metadata_map("labels"), key, value);
}

bool Object::erase_label(std::string_view key) {
  JsonValue* labels = const_cast<JsonValue*>(view().find({"metadata", "labels"}));
  return labels != nullptr && erase_member(*labels, key);
}

void Object::set_annotation(std::string_view key, std::string_view value) {
  set_string_member(metadata_map("annotations"), key, value);
}

bool Object::erase_annotation(std::string_view key) {
  JsonValue* annotations = const_cast<JsonValue*>(view().find({"metadata", "annotations"}));
  return annotations != nullptr && erase_member(*annotations, key);
}

bool Object::add_finalizer(std::string_view finalizer) {
  if (view().has_finalizer(finalizer)) return false;
  JsonValue& parent = metadata();
  JsonValue* finalizers = find_member(parent, "finalizers");
  if (finalizers == nullptr || !finalizers->IsArray()) {
    JsonValue empty(rapidjson::kArrayType);
    set_member(parent, "finalizers", empty);
    finalizers = find_member(parent, "finalizers");
  }
  finalizers->PushBack(copied_string(finalizer, *allocator_), *allocator_);
  return true;
}

bool Object::remove_finalizer(std::string_view finalizer) {
  JsonValue* finalizers = const_cast<JsonValue*>(view().find({"metadata", "finalizers"}));
  if (finalizers == nullptr || !finalizers->IsArray()) return false;
  bool removed = false;
  for (auto* element = finalizers->Begin(); element != finalizers->End();) {
    if (element->IsString() && string_of(element) == finalizer) {
      element = finalizers->Erase(element);
      removed = true;
    } else {
      ++element;
    }
  }
  return removed;
}

bool Object::erase_managed_fields() {
  JsonValue* metadata = find_member(root_, "metadata");
  return metadata != nullptr && metadata->IsObject() && metadata->EraseMember("managedFields");
}

}  // namespace myop::kube
