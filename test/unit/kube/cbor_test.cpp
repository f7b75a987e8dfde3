#include "kube/cbor.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kube/errors.h"
#include "kube/object.h"
#include "kube/watch_parser.h"
#include "support/watch_chunks.h"

using myop::kube::cbor_item_size;
using myop::kube::decode_cbor_document;
using myop::kube::decode_cbor_object;
using myop::kube::to_json_string;
using myop::kube::WatchEncoding;
using myop::kube::WatchEventType;
using myop::kube::WatchParser;

namespace {

// CBOR written by hand, head byte by head byte (RFC 8949 section 3), in the form the API server's
// encoder writes: the self-described tag, byte-string keys and values, definite lengths.
std::string head(unsigned major, std::uint64_t argument) {
  std::string out;
  const auto type = static_cast<char>(major << 5U);
  if (argument < 24) {
    out.push_back(static_cast<char>(type | static_cast<char>(argument)));
  } else if (argument <= 0xff) {
    out.push_back(static_cast<char>(type | 24));
    out.push_back(static_cast<char>(argument));
  } else if (argument <= 0xffff) {
    out.push_back(static_cast<char>(type | 25));
    for (int shift = 8; shift >= 0; shift -= 8) out.push_back(static_cast<char>((argument >> shift) & 0xff));
  } else if (argument <= 0xffffffff) {
    out.push_back(static_cast<char>(type | 26));
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((argument >> shift) & 0xff));
  } else {
    out.push_back(static_cast<char>(type | 27));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((argument >> shift) & 0xff));
  }
  return out;
}
std::string bytes(const std::string& text) { return head(2, text.size()) + text; }  // Go strings
std::string text(const std::string& value) { return head(3, value.size()) + value; }
std::string map(std::size_t entries) { return head(5, entries); }
std::string array(std::size_t items) { return head(4, items); }
std::string unsigned_int(std::uint64_t value) { return head(0, value); }
std::string negative(std::uint64_t value) { return head(1, value - 1); }  // -value
const std::string kSelfDescribed("\xd9\xd9\xf7", 3);
const std::string kTrue("\xf5", 1);
const std::string kNull("\xf6", 1);
const std::string kHalfOnePointFive("\xf9\x3e\x00", 3);  // 1.5 as float16

// A MyResource as the API server writes it with CBORServingAndStorage on.
std::string my_resource(const std::string& name, const std::string& version, const std::string& image) {
  return kSelfDescribed + map(4) + bytes("apiVersion") + bytes("myorg.io/v1beta1") + bytes("kind") +
         bytes("MyResource") + bytes("metadata") + map(3) + bytes("name") + bytes(name) + bytes("namespace") +
         bytes("team-a") + bytes("resourceVersion") + bytes(version) + bytes("spec") + map(5) +
         bytes("image") + bytes(image) + bytes("replicas") + unsigned_int(3) + bytes("paused") + kTrue +
         bytes("weights") + array(3) + negative(2) + kHalfOnePointFive + kNull + bytes("nested") + map(1) +
         text("text key") + array(0);
}

}  // namespace

TEST_CASE("CBOR decoder builds the JSON tree of a custom resource", "[kube][cbor]") {
  auto decoded = decode_cbor_object(my_resource("web", "42", "nginx:1.27"));
  INFO((decoded ? std::string() : decoded.error().message));
  REQUIRE(decoded.ok());
  CHECK(
      decoded->to_json_string() ==
      R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",)"
      R"("resourceVersion":"42"},"spec":{"image":"nginx:1.27","replicas":3,"paused":true,)"
      R"("weights":[-2,1.5,null],"nested":{"text key":[]}}})");
  CHECK(decoded->view().resource_version() == "42");

  auto document = decode_cbor_document(my_resource("web", "42", "nginx:1.27"));
  REQUIRE(document.ok());
  CHECK(myop::kube::string_at(document.value(), {"spec", "image"}) == "nginx:1.27");
}

TEST_CASE("CBOR decoder writes tagged byte strings as their JSON text", "[kube][cbor]") {
  const std::string raw("\x00\xfe\xff", 3);
  const std::string item = map(3) + bytes("b64") + head(6, 22) + bytes(raw) + bytes("b64url") + head(6, 21) +
                           bytes(raw) + bytes("hex") + head(6, 23) + bytes(raw);
  auto decoded = decode_cbor_object(item);
  REQUIRE(decoded.ok());
  CHECK(decoded->to_json_string() == R"({"b64":"AP7/","b64url":"AP7_","hex":"00feff"})");
}

TEST_CASE("CBOR decoder refuses what JSON cannot hold or the server never writes", "[kube][cbor]") {
  struct Case {
    std::string name;
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases{
      {"truncated", my_resource("web", "1", "x").substr(0, 30), "truncated CBOR"},
      {"trailing bytes", my_resource("web", "1", "x") + unsigned_int(1), "1 bytes after the data item"},
      {"integer key", map(1) + unsigned_int(1) + unsigned_int(2), "map key that is not a string"},
      {"container key", map(1) + array(0) + unsigned_int(2), "map key that is not a string"},
      {"below int64", head(1, 0xffffffffffffffffULL), "below the int64 range"},
      {"NaN", std::string("\xf9\x7e\x00", 3), "NaN or infinite"},
      {"indefinite map", std::string("\xbf\xff", 2), "indefinite-length"},
      {"length beyond the input", array(1000000), "beyond the input's end"},
      {"reserved head", std::string("\x1c", 1), "malformed CBOR at offset 0"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto decoded = decode_cbor_object(c.bytes);
    REQUIRE_FALSE(decoded.ok());
    CHECK_THAT(decoded.error().message, Catch::Contains(c.message));
  }

  std::string deep;
  for (int i = 0; i < 200; ++i) deep += array(1);
  deep += unsigned_int(0);
  auto too_deep = decode_cbor_object(deep);
  REQUIRE_FALSE(too_deep.ok());
  CHECK_THAT(too_deep.error().message, Catch::Contains("nested deeper than 128"));
}

TEST_CASE("cbor_item_size finds where an item of a sequence ends", "[kube][cbor]") {
  const std::string first = my_resource("a", "1", "x");
  const std::string sequence = first + my_resource("b", "2", "y");
  auto size = cbor_item_size(sequence);
  REQUIRE(size.ok());
  REQUIRE(size.value().has_value());
  CHECK(*size.value() == first.size());
  for (std::size_t cut = 0; cut < first.size(); ++cut) {
    auto partial = cbor_item_size(std::string_view(first).substr(0, cut));
    REQUIRE(partial.ok());
    CHECK_FALSE(partial.value().has_value());
  }
}

TEST_CASE("watch parser reads a CBOR sequence cut anywhere", "[kube][cbor][watch_parser]") {
  auto event = [](const std::string& type, const std::string& object) {
    // The object of a watch event is itself self-described; the event too.
    return kSelfDescribed + map(2) + bytes("type") + bytes(type) + bytes("object") + object;
  };
  const std::string gone = kSelfDescribed + map(5) + bytes("kind") + bytes("Status") + bytes("apiVersion") +
                           bytes("v1") + bytes("status") + bytes("Failure") + bytes("reason") +
                           bytes("Expired") + bytes("code") + unsigned_int(410);
  const std::string stream = event("ADDED", my_resource("web", "10", "a")) +
                             event("MODIFIED", my_resource("web", "11", "b")) +
                             event("DELETED", my_resource("web", "12", "b")) + event("ERROR", gone);
  for (std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{13}}) {
    INFO("chunks of " << chunk);
    WatchParser parser;
    parser.set_encoding(WatchEncoding::Cbor);
    const auto seen = myop::testing::parse_in_chunks(parser, stream, chunk, [](const auto& event) {
      return std::string(myop::kube::watch_event_type_name(event.type)) + " " +
             std::string(event.resource_version()) + " " +
             myop::kube::string_at(event.object.json(), {"spec", "image"});
    });
    CHECK(seen == std::vector<std::string>{"ADDED 10 a", "MODIFIED 11 b", "DELETED 12 b", "error Gone"});
    CHECK(parser.pending_bytes() == 0);
  }

  WatchParser malformed;
  malformed.set_encoding(WatchEncoding::Cbor);
  malformed.append(std::string("\x1c", 1) + event("ADDED", my_resource("web", "10", "a")));
  auto item = malformed.next();
  REQUIRE(item.has_value());
  REQUIRE_FALSE(item->ok());
  CHECK_THAT(item->error().message, Catch::Contains("malformed watch event"));
  CHECK_FALSE(malformed.next().has_value());  // the rest of the stream is dropped: the watch reconnects
}

TEST_CASE("CBOR media types", "[kube][cbor]") {
  CHECK(myop::kube::is_cbor_media_type("application/cbor"));
  CHECK(myop::kube::is_cbor_media_type("application/cbor-seq"));
  CHECK(myop::kube::is_cbor_media_type("application/cbor;charset=utf-8"));
  CHECK_FALSE(myop::kube::is_cbor_media_type("application/json"));
  CHECK(myop::kube::watch_encoding_of("application/cbor-seq") == WatchEncoding::Cbor);
  CHECK(myop::kube::watch_encoding_of("application/json") == WatchEncoding::Json);
}

TEST_CASE("a CBOR Status answer becomes the typed error it describes", "[kube][cbor]") {
  const std::string status = kSelfDescribed + map(5) + bytes("kind") + bytes("Status") + bytes("status") +
                             bytes("Failure") + bytes("message") + bytes("myresources \"web\" not found") +
                             bytes("reason") + bytes("NotFound") + bytes("code") + unsigned_int(404);
  const auto error = myop::kube::error_from_response(404, status);
  CHECK(error.reason == myop::kube::Reason::NotFound);
  CHECK_THAT(error.message, Catch::Contains("not found"));
}

TEST_CASE("CBOR decoder can skip metadata.managedFields", "[kube][cbor]") {
  const std::string managed = array(1) + map(2) + bytes("manager") + bytes("kubectl") + bytes("fieldsV1") +
                              map(1) + bytes("f:spec") + map(0);
  const std::string object = kSelfDescribed + map(2) + bytes("metadata") + map(2) + bytes("name") +
                             bytes("web") + bytes("managedFields") + managed + bytes("spec") + map(1) +
                             bytes("managedFields") + unsigned_int(1);
  auto kept = decode_cbor_object(object);
  REQUIRE(kept.ok());
  CHECK(kept->to_json_string() ==
        R"({"metadata":{"name":"web","managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},)"
        R"("spec":{"managedFields":1}})");
  // Only metadata's: a field of that name elsewhere is the object's own.
  auto dropped = decode_cbor_object(object, /*drop_managed_fields=*/true);
  REQUIRE(dropped.ok());
  CHECK(dropped->to_json_string() == R"({"metadata":{"name":"web"},"spec":{"managedFields":1}})");

  WatchParser parser;
  parser.set_encoding(WatchEncoding::Cbor);
  parser.set_drop_managed_fields(true);
  parser.append(kSelfDescribed + map(2) + bytes("type") + bytes("ADDED") + bytes("object") + object);
  auto event = parser.next();
  REQUIRE(event.has_value());
  REQUIRE(event->ok());
  CHECK(event->value().object.to_json_string() ==
        R"({"metadata":{"name":"web"},"spec":{"managedFields":1}})");
}
