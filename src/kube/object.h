// A Kubernetes object of any kind held as RapidJSON, with typed metadata accessors.
//
// `ObjectView` reads a `rapidjson::Value` in place (no copy). `Object` owns one JSON value together with
// the pool allocator that backs it. The allocator is sized per object: RapidJSON's default
// MemoryPoolAllocator grabs 64 KiB on first use, so a default `rapidjson::Document` per cached object
// would cost at least 64 KiB each (10,000 objects = 640 MiB). `Object::parse` sizes the pool from the
// input instead, and `deep_copy` compacts an object whose pool holds garbage from earlier edits.
//
// Merge patches live in kube/merge_patch.h, hashing-stable serialization in kube/canonical_json.h.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kube/errors.h"
#include "kube/json_parser.h"

namespace myop::kube {

using JsonAllocator = rapidjson::MemoryPoolAllocator<rapidjson::CrtAllocator>;
using JsonValue = rapidjson::GenericValue<rapidjson::UTF8<>, JsonAllocator>;
// The types of rapidjson::Document, so that a parsed Document's values and an Object's mix freely.
static_assert(std::is_same_v<JsonAllocator, rapidjson::Document::AllocatorType>);

// Pool chunk sizes. `kAutoChunkSize` lets `Object::parse` pick one from the input length.
inline constexpr std::size_t kAutoChunkSize = 0;
inline constexpr std::size_t kSmallChunkSize = 1024;
inline constexpr std::size_t kLargestAutoChunkSize = std::size_t{64} * 1024;

// metadata.ownerReferences[i]
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;
};

// Read-only view of an object. Cheap to copy; valid while the viewed value lives and is not modified
// structurally. A missing or wrongly typed field reads as empty (""/0/nullopt), never as an error: the
// API server is the validator, the operator only reads.
class ObjectView {
 public:
  explicit ObjectView(const JsonValue& value) : value_(&value) {}

  const JsonValue& json() const { return *value_; }

  std::string_view api_version() const;
  std::string_view kind() const;
  std::string_view name() const;
  std::string_view namespace_name() const;  // "namespace" is a keyword
  std::string_view uid() const;
  std::string_view resource_version() const;  // opaque: never compare as a number
  std::int64_t generation() const;            // 0 when absent
  std::string_view creation_timestamp() const;

  std::optional<std::string_view> label(std::string_view key) const;
  std::map<std::string, std::string, std::less<>> labels() const;
  std::optional<std::string_view> annotation(std::string_view key) const;
  std::map<std::string, std::string, std::less<>> annotations() const;

  std::vector<OwnerReference> owner_references() const;
  // The owner reference with controller=true, if any (there is at most one).
  std::optional<OwnerReference> controller_owner() const;

  std::vector<std::string_view> finalizers() const;
  bool has_finalizer(std::string_view finalizer) const;

  std::optional<std::string_view> deletion_timestamp() const;
  bool is_being_deleted() const { return deletion_timestamp().has_value(); }

  // Follows object members, e.g. find({"spec", "replicas"}); nullptr when any step is missing.
  const JsonValue* find(std::initializer_list<std::string_view> path) const;

 private:
  const JsonValue* value_;
};

// Member lookup by string_view (RapidJSON wants a Value or a NUL-terminated string).
const JsonValue* find_member(const JsonValue& object, std::string_view key);
JsonValue* find_member(JsonValue& object, std::string_view key);
// Removes member `key` of `object`, keeping the order of the others; false when there was none (or
// `object` is not an object).
bool erase_member(JsonValue& object, std::string_view key);

// The string at `path` of `object` (e.g. {"metadata", "continue"}); empty when a step is missing or
// the value is not a string.
std::string string_at(const JsonValue& object, std::initializer_list<std::string_view> path);

// A JSON string holding a copy of `text` in `allocator`.
JsonValue json_string(std::string_view text, JsonAllocator& allocator);

// Compact JSON text (no whitespace, member order as stored).
std::string to_json_string(const JsonValue& value);

// Copies `source` into `allocator`, strings included (RapidJSON's own copy constructor shares
// const-string pointers, which would dangle once the source buffer goes away).
JsonValue deep_copy_value(const JsonValue& source, JsonAllocator& allocator);

// A pool for building a tree that is copied out before the pool is left (Object::copy_of): the calling
// thread's, reused by every ScratchPool of the thread in turn, its first 64 KiB never freed (a larger
// tree's extra chunks are freed when the ScratchPool ends). Not reentrant: one at a time per thread.
class ScratchPool {
 public:
  ScratchPool();
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;
  JsonAllocator& allocator() { return *allocator_; }

 private:
  JsonAllocator* allocator_;
};

// An owned JSON value (normally an object) and the allocator behind it. Move-only; copies are explicit
// through `deep_copy` because they cost memory.
class Object {
 public:
  // An empty JSON object `{}` in a pool of `chunk_size` bytes.
  explicit Object(std::size_t chunk_size = kSmallChunkSize);

  // Parses JSON text with the one bounded parser (kube/json_parser.h): by default as one object, at most
  // kMaximumObjectJsonBytes and kMaximumJsonDepth deep. With kAutoChunkSize the pool is sized from `json`
  // so one chunk usually holds the whole tree. Invalid, too large or too deeply nested text gives
  // Reason::Unknown saying which, with the offset.
  static Result<Object> parse(std::string_view json, const JsonLimits& limits = {},
                              std::size_t chunk_size = kAutoChunkSize);
  // Deep-copies any value into a new, tightly sized pool.
  static Object copy_of(const JsonValue& value, std::size_t chunk_size = kAutoChunkSize);
  // Takes over a value whose strings and children live in `allocator` (used by the watch parser to
  // keep the "object" member of an event without copying it).
  static Object adopt(std::unique_ptr<JsonAllocator> allocator, JsonValue&& value);

  Object(Object&& other) noexcept;
  Object& operator=(Object&& other) noexcept;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  ~Object() = default;

  Object deep_copy() const { return copy_of(root_); }

  ObjectView view() const { return ObjectView(root_); }
  const JsonValue& json() const { return root_; }
  JsonValue& json() { return root_; }
  JsonAllocator& allocator() { return *allocator_; }

  // Shorthands for the view's accessors used most.
  std::string_view name() const { return view().name(); }
  std::string_view namespace_name() const { return view().namespace_name(); }
  std::string_view resource_version() const { return view().resource_version(); }
  std::string_view uid() const { return view().uid(); }

  // Metadata edits. Each creates `metadata` and the map it touches when missing.
  void set_name(std::string_view name);
  void set_namespace_name(std::string_view namespace_name);
  void set_resource_version(std::string_view resource_version);
  void set_label(std::string_view key, std::string_view value);
  bool erase_label(std::string_view key);  // true when the label was there
  void set_annotation(std::string_view key, std::string_view value);
  bool erase_annotation(std::string_view key);
  bool add_finalizer(std::string_view finalizer);     // false when already present
  bool remove_finalizer(std::string_view finalizer);  // false when absent
  // Drops metadata.managedFields: often the largest part of an object and never read by an operator.
  bool erase_managed_fields();

  // Sets (or replaces) a member of any object value inside this Object, copying `key` and `value`.
  void set_member(JsonValue& parent, std::string_view key, const JsonValue& value);
  void set_string_member(JsonValue& parent, std::string_view key, std::string_view value);

  std::string to_json_string() const { return kube::to_json_string(root_); }

  // Bytes reserved by the pool; what this object costs in a cache.
  std::size_t allocated_bytes() const;

 private:
  Object(std::unique_ptr<JsonAllocator> allocator, JsonValue&& value);

  JsonValue& metadata();
  JsonValue& metadata_map(std::string_view field);

  // Declared before root_ so that it is destroyed after it.
  std::unique_ptr<JsonAllocator> allocator_;
  JsonValue root_;
};

}  // namespace myop::kube
