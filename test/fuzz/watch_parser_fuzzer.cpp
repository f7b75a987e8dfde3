// libFuzzer target: the watch-stream parser and the object helpers behind it.
//
// Input: one byte that picks how the rest is cut into chunks and, in its top two bits, the encoding
// (JSON lines, protobuf frames, a CBOR sequence), then the body of a watch response.
// Beyond "no crash, no sanitizer report" it checks properties a user relies on:
//   - cutting the stream differently never changes the events (the parser is incremental),
//   - a deep copy serializes like the original,
//   - canonical_json is a fixed point and canonical_equal agrees with it,
//   - applying create_merge_patch(a, b) to a gives b (minus nulls, which merge patch cannot express).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kube/canonical_json.h"
#include "kube/merge_patch.h"
#include "kube/object.h"
#include "kube/watch_parser.h"

namespace {

using myop::kube::JsonValue;
using myop::kube::Object;

// A property failed: crash so that libFuzzer keeps the input.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

bool has_duplicate_member_names(const JsonValue& value) {
  if (value.IsArray()) {
    for (const auto& element : value.GetArray()) {
      if (has_duplicate_member_names(element)) return true;
    }
    return false;
  }
  if (!value.IsObject()) return false;
  std::vector<std::string_view> names;
  for (const auto& member : value.GetObject()) {
    names.emplace_back(member.name.GetString(), member.name.GetStringLength());
    if (has_duplicate_member_names(member.value)) return true;
  }
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) != names.end();
}

const char* const kReferenceObject =
    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b","labels":{"x":"1"},)"
    R"("resourceVersion":"7"},"data":{"k":"v","n":1.5},"list":[1,2,3]})";

void check_object(const Object& object) {
  const std::string canonical = myop::kube::canonical_json(object.json());
  Object copy = object.deep_copy();
  require(copy.to_json_string() == object.to_json_string());
  require(myop::kube::canonical_equal(copy.json(), object.json()));

  auto reparsed = Object::parse(canonical);
  require(reparsed.ok());
  require(myop::kube::canonical_json(reparsed->json()) == canonical);

  // Accessors must tolerate any shape.
  auto view = object.view();
  (void)view.name();
  (void)view.generation();
  (void)view.labels();
  (void)view.controller_owner();
  (void)view.finalizers();
  (void)view.deletion_timestamp();

  if (has_duplicate_member_names(object.json()))
    return;  // merge patch is defined for JSON objects without them
  auto reference = Object::parse(kReferenceObject);
  require(reference.ok());
  for (int direction = 0; direction < 2; ++direction) {
    const JsonValue& original = direction == 0 ? reference->json() : object.json();
    const JsonValue& modified = direction == 0 ? object.json() : reference->json();
    Object patch = myop::kube::create_merge_patch(original, modified);
    Object patched = Object::copy_of(original);
    myop::kube::apply_merge_patch(patched, patch.json());
    Object expected(256);
    myop::kube::apply_merge_patch(expected, modified);  // the modified document without its null members
    require(myop::kube::canonical_equal(patched.json(), expected.json()));
  }
}

std::vector<std::string> parse_in_chunks(std::string_view stream, std::uint8_t cut_seed, bool whole) {
  myop::kube::WatchParser parser(4096);
  static constexpr std::array<myop::kube::WatchEncoding, 4> kEncodings{
      myop::kube::WatchEncoding::Json, myop::kube::WatchEncoding::Protobuf, myop::kube::WatchEncoding::Cbor,
      myop::kube::WatchEncoding::Json};
  parser.set_encoding(kEncodings[cut_seed >> 6U]);
  std::vector<std::string> results;
  auto drain = [&] {
    while (auto item = parser.next()) {
      if (item->ok()) {
        check_object(item->value().object);
        results.push_back(std::string(myop::kube::watch_event_type_name(item->value().type)) + " " +
                          item->value().object.to_json_string());
      } else {
        results.push_back("error " + std::string(myop::kube::reason_name(item->error().reason)) + " " +
                          std::to_string(item->error().http_code));
      }
    }
  };
  if (whole) {
    parser.append(stream);
    drain();
    return results;
  }
  std::uint32_t state = cut_seed * 2654435761u + 1;
  std::size_t offset = 0;
  while (offset < stream.size()) {
    state = state * 1103515245u + 12345u;
    const std::size_t length = 1 + (state >> 16) % 97;
    parser.append(stream.substr(offset, length));
    offset += length;
    drain();
  }
  return results;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto whole = parse_in_chunks(stream, data[0], /*whole=*/true);
  const auto chunked = parse_in_chunks(stream, data[0], /*whole=*/false);
  // The over-long-line error may be reported at a different point, but only the number of bytes seen
  // decides it, so even that must match.
  require(whole == chunked);
  return 0;
}
