#include "kube/merge_patch.h"

#include <catch2/catch.hpp>

#include <string>

#include "kube/canonical_json.h"

using myop::kube::Object;

namespace {

Object parse(const std::string& text) {
  auto parsed = Object::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

std::string canonical(const std::string& text) { return myop::kube::canonical_json(parse(text).json()); }

}  // namespace

// RFC 7386 section 3, every row of the example table: target, patch, result.
TEST_CASE("apply merge patch: RFC 7386 examples", "[kube][merge_patch]") {
  struct Example {
    const char* target;
    const char* patch;
    const char* result;
  };
  const Example examples[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", R"(null)", R"(null)"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& example : examples) {
    INFO("target " << example.target << " patch " << example.patch);
    Object target = parse(example.target);
    Object patch = parse(example.patch);
    myop::kube::apply_merge_patch(target, patch.json());
    CHECK(myop::kube::canonical_json(target.json()) == canonical(example.result));
  }
}

TEST_CASE("create merge patch: minimal and round-trips", "[kube][merge_patch]") {
  struct Example {
    const char* original;
    const char* modified;
    const char* expected_patch;
  };
  const Example examples[] = {
      {R"({"a":"b"})", R"({"a":"b"})", R"({})"},
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({})", R"({"a":null})"},
      {R"({"a":"b"})", R"({"a":"b","c":1})", R"({"c":1})"},
      {R"({"a":{"b":"c","d":"e"}})", R"({"a":{"b":"c","d":"f"}})", R"({"a":{"d":"f"}})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"c","x":{"y":1}}})", R"({"a":{"x":{"y":1}}})"},
      {R"({"a":[1,2,3]})", R"({"a":[1,2]})", R"({"a":[1,2]})"},
      {R"({"a":[1,2]})", R"({"a":[1,2]})", R"({})"},
      {R"({"a":1})", R"({"a":1.0})", R"({})"},
      {R"({"a":{"b":1}})", R"({"a":"x"})", R"({"a":"x"})"},
      {R"({"a":"x"})", R"({"a":{"b":1}})", R"({"a":{"b":1}})"},
      {R"({"a":1,"b":2})", R"({"b":2,"a":1})", R"({})"},
      {R"({"a":"b"})", R"({"a":"b","n":null})", R"({})"},
      {R"([1])", R"({"a":1})", R"({"a":1})"},
      {R"({"a":1})", R"([1])", R"([1])"},
      {R"({"metadata":{"labels":{"x":"1","y":"2"}},"spec":{"replicas":1}})",
       R"({"metadata":{"labels":{"x":"1"}},"spec":{"replicas":3}})",
       R"({"metadata":{"labels":{"y":null}},"spec":{"replicas":3}})"},
  };
  for (const auto& example : examples) {
    INFO("original " << example.original << " modified " << example.modified);
    Object original = parse(example.original);
    Object modified = parse(example.modified);
    Object patch = myop::kube::create_merge_patch(original.json(), modified.json());
    CHECK(myop::kube::canonical_json(patch.json()) == canonical(example.expected_patch));
    CHECK(myop::kube::is_empty_merge_patch(patch.json()) == (std::string(example.expected_patch) == "{}"));

    // Applying the computed patch to the original gives the modified document (minus null members,
    // which a merge patch cannot express).
    Object patched = original.deep_copy();
    myop::kube::apply_merge_patch(patched, patch.json());
    Object expected = modified.deep_copy();
    myop::kube::apply_merge_patch(expected, parse("{}").json());  // strips nulls the same way
    if (expected.json().IsObject()) {
      Object stripped(1024);
      myop::kube::apply_merge_patch(stripped, modified.json());
      CHECK(myop::kube::canonical_json(patched.json()) == myop::kube::canonical_json(stripped.json()));
    } else {
      CHECK(myop::kube::canonical_json(patched.json()) == myop::kube::canonical_json(modified.json()));
    }
  }
}

TEST_CASE("merge patch copies into the target's pool", "[kube][merge_patch]") {
  Object target = parse(R"({"a":1})");
  {
    Object patch = parse(R"({"b":{"long-member-name-here":"a long string value that is not inline"}})");
    myop::kube::apply_merge_patch(target, patch.json());
  }
  CHECK(target.to_json_string() ==
        R"({"a":1,"b":{"long-member-name-here":"a long string value that is not inline"}})");
}
