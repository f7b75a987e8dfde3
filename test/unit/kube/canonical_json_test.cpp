#include "kube/canonical_json.h"

#include <catch2/catch.hpp>

#include <string>

using myop::kube::Object;

namespace {

std::string canonical(const std::string& text) {
  auto parsed = Object::parse(text);
  REQUIRE(parsed.ok());
  return myop::kube::canonical_json(parsed->json());
}

}  // namespace

TEST_CASE("canonical json sorts members at every level and drops whitespace", "[kube][canonical_json]") {
  CHECK(canonical(R"({ "b": 1, "a": { "z": [3, {"y": 1, "x": 2}], "c": null } })") ==
        R"({"a":{"c":null,"z":[3,{"x":2,"y":1}]},"b":1})");
  // Bytewise order: upper case before lower case, a prefix before its extensions.
  CHECK(canonical(R"({"ab":1,"a":2,"B":3})") == R"({"B":3,"a":2,"ab":1})");
}

TEST_CASE("canonical json is the same for equal documents written differently", "[kube][canonical_json]") {
  const std::string first = canonical(R"({"spec":{"replicas":3,"image":"nginx:1.27"},"kind":"X"})");
  const std::string second =
      canonical("{\n  \"kind\" : \"X\",\n  \"spec\": {\"image\": \"nginx:1.27\", \"replicas\": 3.0}\n}");
  CHECK(first == second);
  CHECK(first != canonical(R"({"spec":{"replicas":4,"image":"nginx:1.27"},"kind":"X"})"));
}

TEST_CASE("canonical json numbers", "[kube][canonical_json]") {
  CHECK(canonical("[1, 1.0, -0.0, 1e2, 1.5, 0.1, -7, 18446744073709551615, -9223372036854775808]") ==
        "[1,1,0,100,1.5,0.1,-7,18446744073709551615,-9223372036854775808]");
  CHECK(canonical("[1e300]") == "[1e300]");
  // Zero with a large exponent is zero (RapidJSON's full-precision mode got this wrong).
  CHECK(canonical("[0e150, 0.0e300, 0e-400, -0E+5]") == "[0,0,0,0]");
  // The same text always gives the same bytes.
  CHECK(canonical("[9007199254740993.5, 0.30000000000000004]") ==
        canonical("[9007199254740993.5, 0.30000000000000004]"));
}

TEST_CASE("canonical json strings are escaped consistently", "[kube][canonical_json]") {
  CHECK(canonical(R"(["\u0041\n\"\\\/"])") == R"(["A\n\"\\/"])");
  CHECK(canonical(R"(["\u00e9"])") == canonical("[\"\xc3\xa9\"]"));
}

TEST_CASE("canonical json is stable across repeated serialization", "[kube][canonical_json]") {
  const std::string once = canonical(R"({"z":{"b":[1,{"d":1,"c":2}],"a":"x"},"y":true})");
  CHECK(canonical(once) == once);
}

TEST_CASE("canonical_equal agrees with canonical_json", "[kube][canonical_json]") {
  const char* const documents[] = {
      R"({"a":1,"b":[1,2,{"c":null}]})",
      R"({"b":[1,2,{"c":null}],"a":1.0})",
      R"({"a":1,"b":[2,1,{"c":null}]})",
      R"({"a":1,"b":[1,2,{"c":false}]})",
      R"({"a":1,"b":[1,2,{"c":null}],"d":0})",
      R"([9223372036854775808])",
      R"([9223372036854775808.0])",
      R"([true])",
      R"([false])",
      R"("x")",
      R"("x\u0000y")",
      R"("x")",
      R"({"a":1,"a":2})",
      R"({"a":2,"a":1})",
  };
  for (const char* left : documents) {
    for (const char* right : documents) {
      auto left_object = Object::parse(left);
      auto right_object = Object::parse(right);
      REQUIRE(left_object.ok());
      REQUIRE(right_object.ok());
      INFO(left << " vs " << right);
      CHECK(myop::kube::canonical_equal(left_object->json(), right_object->json()) ==
            (myop::kube::canonical_json(left_object->json()) ==
             myop::kube::canonical_json(right_object->json())));
    }
  }
}
