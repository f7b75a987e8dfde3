// The one bounded JSON parser: what the operator reads still parses, and input that would exhaust the
// stack (deep nesting) or memory (size) is refused with an error naming the limit, never a crash.
#include "kube/json_parser.h"

#include <catch2/catch.hpp>

#include <string>

using namespace myop::kube;

namespace {

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// {"a":{"a":...{"a":1}...}} with `depth` objects.
std::string nested_objects(std::size_t depth) {
  std::string text;
  for (std::size_t level = 0; level < depth; ++level) text += R"({"a":)";
  text += "1";
  text += std::string(depth, '}');
  return text;
}

const char* const kList = R"({"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"12",
  "continue":"next"},"items":[{"metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"}},
  {"metadata":{"name":"b"},"data":{"n":"1.5"}}]})";

}  // namespace

TEST_CASE("json parser: objects and lists parse as before", "[kube][json]") {
  auto list = parse_json_document(kList, JsonLimits{});
  REQUIRE(list.ok());
  REQUIRE(list->IsObject());
  CHECK(std::string((*list)["kind"].GetString()) == "ConfigMapList");
  REQUIRE((*list)["items"].IsArray());
  CHECK((*list)["items"].Size() == 2);
  CHECK(std::string((*list)["items"][1]["metadata"]["name"].GetString()) == "b");

  auto scalar = parse_json_document("42", JsonLimits{});
  REQUIRE(scalar.ok());
  CHECK(scalar->GetInt() == 42);
  auto numbers =
      parse_json_document(R"([-1, 18446744073709551615, 1.5e3, true, null, "\u00e9"])", JsonLimits{});
  REQUIRE(numbers.ok());
  CHECK((*numbers)[0].GetInt() == -1);
  CHECK((*numbers)[1].GetUint64() == 18446744073709551615ULL);
  CHECK((*numbers)[2].GetDouble() == 1500.0);
  CHECK(std::string((*numbers)[5].GetString()) == "\xc3\xa9");
}

TEST_CASE("json parser: nesting is bounded while parsing", "[kube][json]") {
  CHECK(parse_json_document(nested_arrays(kMaximumJsonDepth), JsonLimits{}).ok());
  CHECK(parse_json_document(nested_objects(kMaximumJsonDepth), JsonLimits{}).ok());

  auto one_too_deep = parse_json_document(nested_arrays(kMaximumJsonDepth + 1), JsonLimits{});
  REQUIRE_FALSE(one_too_deep.ok());
  CHECK(one_too_deep.error().reason == Reason::Unknown);
  // The offset of the first bracket too many.
  CHECK(one_too_deep.error().message ==
        "JSON nested deeper than 128 arrays and objects at offset " + std::to_string(kMaximumJsonDepth));

  SECTION("100,000 open brackets are refused without exhausting the stack") {
    auto brackets = parse_json_document(std::string(100'000, '['), JsonLimits{});
    REQUIRE_FALSE(brackets.ok());
    CHECK(brackets.error().message.find("nested deeper than 128") != std::string::npos);

    auto objects = parse_json_document(nested_objects(100'000), JsonLimits{});
    REQUIRE_FALSE(objects.ok());
    CHECK(objects.error().message.find("nested deeper than 128") != std::string::npos);
  }

  SECTION("brackets inside strings are text, not nesting") {
    const std::string text = "[\"" + std::string(10'000, '[') + "\"]";
    auto parsed = parse_json_document(text, JsonLimits{});
    REQUIRE(parsed.ok());
    CHECK((*parsed)[0].GetStringLength() == 10'000);
  }

  SECTION("the caller may set a tighter depth") {
    CHECK(parse_json_document(R"({"a":[1]})", JsonLimits{kMaximumObjectJsonBytes, 2}).ok());
    CHECK_FALSE(parse_json_document(R"({"a":[[1]]})", JsonLimits{kMaximumObjectJsonBytes, 2}).ok());
  }
}

TEST_CASE("json parser: text over the caller's size limit is refused before parsing", "[kube][json]") {
  const std::string text = R"({"data":")" + std::string(1000, 'x') + R"("})";
  CHECK(parse_json_document(text, JsonLimits{text.size()}).ok());
  auto too_large = parse_json_document(text, JsonLimits{text.size() - 1});
  REQUIRE_FALSE(too_large.ok());
  CHECK(too_large.error().reason == Reason::Unknown);
  CHECK(too_large.error().message == "JSON text of " + std::to_string(text.size()) +
                                         " bytes is larger than the limit of " +
                                         std::to_string(text.size() - 1) + " bytes");

  // The default limits are those of one object and of a LIST page.
  CHECK(JsonLimits{}.maximum_bytes == kMaximumObjectJsonBytes);
  CHECK(kMaximumListJsonBytes > kMaximumObjectJsonBytes);
  const std::string seventeen_mebibytes = R"({"data":")" + std::string(17 * 1024 * 1024, 'x') + R"("})";
  CHECK_FALSE(parse_json_document(seventeen_mebibytes, JsonLimits{}).ok());
  CHECK(parse_json_document(seventeen_mebibytes, JsonLimits{kMaximumListJsonBytes}).ok());
}

TEST_CASE("json parser: malformed text names the offset and the problem", "[kube][json]") {
  auto broken = parse_json_document(R"({"a": )", JsonLimits{});
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.rfind("invalid JSON at offset 6: ", 0) == 0);

  CHECK_FALSE(parse_json_document("{} trailing", JsonLimits{}).ok());
  CHECK_FALSE(parse_json_document("", JsonLimits{}).ok());
  CHECK_FALSE(parse_json_document("\"\xff\xfe\"", JsonLimits{}).ok());  // invalid UTF-8
  CHECK_FALSE(parse_json_document(std::string("[1,\0]", 5), JsonLimits{}).ok());
}

TEST_CASE("json parser: values live in the allocator the caller gives", "[kube][json]") {
  rapidjson::MemoryPoolAllocator<> allocator(1024);
  {
    auto parsed = parse_json_document(kList, JsonLimits{}, &allocator);
    REQUIRE(parsed.ok());
    CHECK(&parsed->GetAllocator() == &allocator);
  }
  CHECK(allocator.Size() > 0);
}

TEST_CASE("json parser: numbers are read exactly, so canonical JSON read back is the same", "[kube][json]") {
  auto parsed = parse_json_document(
      R"([1, -1, 18446744073709551615, -9223372036854775808, 18446744073709551616, -9223372036854775809,)"
      R"( 4.444444444444444e44, 0.1, 1e-400, 0e150, -0.0, 5e-324])",
      JsonLimits{});
  REQUIRE(parsed.ok());
  const auto& values = parsed.value();
  CHECK(values[0].GetInt64() == 1);
  CHECK(values[1].GetInt64() == -1);
  CHECK(values[2].GetUint64() == 18446744073709551615ULL);
  CHECK(values[3].GetInt64() == INT64_MIN);
  // Integers beyond 64 bits, and decimals: the double nearest to the text (std::strtod's).
  CHECK(values[4].GetDouble() == 18446744073709551616.0);
  CHECK(values[5].GetDouble() == -9223372036854775809.0);
  CHECK(values[6].GetDouble() == 4.444444444444444e44);  // RapidJSON's own reading was an ulp off
  CHECK(values[7].GetDouble() == 0.1);
  CHECK(values[8].GetDouble() == 0.0);  // below the smallest subnormal
  CHECK(values[9].GetDouble() == 0.0);
  CHECK(values[10].GetDouble() == 0.0);
  CHECK(values[11].GetDouble() == 5e-324);

  // Beyond a double's range: refused, by RapidJSON's scan or by the parser's own reading.
  auto huge = parse_json_document(R"({"a": [1e400]})", JsonLimits{});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message == "invalid JSON at offset 7: Number too big to be stored in double.");
  auto over = parse_json_document(R"({"a": [75e307]})", JsonLimits{});
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message.rfind("JSON number 75e307 out of a double's range at offset ", 0) == 0);
}
