#include "myresource/spec_hash.h"

#include <catch2/catch.hpp>

using namespace myop::myresource;
using myop::kube::Object;

namespace {
std::string hash_of(const std::string& json) {
  auto object = Object::parse(json);
  REQUIRE(object.ok());
  return spec_hash(object->json());
}
}  // namespace

TEST_CASE("spec_hash is short lower-case hex", "[myresource][hash]") {
  std::string hash = hash_of(R"({"replicas":1})");
  CHECK(hash.size() == kSpecHashLength);
  CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("spec_hash ignores member order and whitespace", "[myresource][hash]") {
  CHECK(hash_of(R"({"replicas":1,"template":{"a":"x","b":[1,2]}})") ==
        hash_of(R"({ "template" : { "b" : [ 1, 2 ], "a":"x" }, "replicas" : 1 })"));
}

TEST_CASE("spec_hash changes with any value, array order included", "[myresource][hash]") {
  std::string base = hash_of(R"({"replicas":1,"template":{"a":"x","b":[1,2]}})");
  auto changed = GENERATE(as<std::string>{}, R"({"replicas":2,"template":{"a":"x","b":[1,2]}})",
                          R"({"replicas":1,"template":{"a":"y","b":[1,2]}})",
                          R"({"replicas":1,"template":{"a":"x","b":[2,1]}})",
                          R"({"replicas":1,"template":{"a":"x","b":[1,2],"c":null}})",
                          R"({"replicas":"1","template":{"a":"x","b":[1,2]}})");
  CAPTURE(changed);
  CHECK(hash_of(changed) != base);
}

TEST_CASE("spec_hash is stable across releases", "[myresource][hash]") {
  // A changed hash function would make every operator upgrade rewrite every Deployment: pin it.
  CHECK(hash_of(R"({"replicas":1})") == hash_of(R"({"replicas":1.0})"));
  CHECK(hash_of("{}") == "44136fa355b3678a");  // sha256("{}")
}
