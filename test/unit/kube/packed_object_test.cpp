#include "kube/packed_object.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <thread>
#include <vector>

using myop::kube::Object;
using myop::kube::ObjectPacker;

namespace {

std::string deployment(const std::string& name, int replicas, const std::string& image) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
         R"(","namespace":"shop","uid":"0b7c-)" + name + R"(","resourceVersion":"4711","labels":{"app":")" +
         name + R"("}},"spec":{"replicas":)" + std::to_string(replicas) +
         R"(,"template":{"spec":{"containers":[{"name":"app","image":")" + image +
         R"(","terminationMessagePath":"/dev/termination-log"}]}}},"status":{"conditions":[{"type":"Available",)"
         R"("message":"Deployment has minimum availability.","status":"True"}]}})";
}

Object parse(const std::string& text) {
  auto parsed = Object::parse(text);
  REQUIRE(parsed);
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("packer: an object comes back as the same JSON", "[kube][packed]") {
  ObjectPacker packer;
  CHECK(packer.dictionary_size() == 0);
  const Object first = parse(deployment("web", 2, "registry.example/web:1.0"));
  const Object second = parse(deployment("shop-frontend", 5, "registry.example/frontend:2.3.4"));
  const std::string packed_first = packer.pack(first.json());
  const std::string packed_second = packer.pack(second.json());
  CHECK(packer.dictionary_size() == first.to_json_string().size());

  auto text = packer.unpack_text(packed_second);
  REQUIRE(text);
  CHECK(*text == second.to_json_string());
  auto object = packer.unpack(packed_first);
  REQUIRE(object);
  CHECK(object->to_json_string() == first.to_json_string());
  CHECK(object->name() == "web");
}

TEST_CASE("packer: objects like the first one pack to a small fraction of their text", "[kube][packed]") {
  ObjectPacker packer;
  (void)packer.pack(parse(deployment("web", 2, "registry.example/web:1.0")).json());
  const Object other = parse(deployment("checkout", 3, "registry.example/checkout:7.1"));
  const std::string packed = packer.pack(other.json());
  // The text is ~390 bytes; what differs from the dictionary is the names, the count and the image.
  CHECK(packed.size() * 4 < other.to_json_string().size());
}

TEST_CASE("packer: objects unlike the dictionary, empty ones and large ones round-trip", "[kube][packed]") {
  ObjectPacker packer;
  (void)packer.pack(parse(R"({})").json());
  std::mt19937 random(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible on purpose
  std::string noise;
  for (int i = 0; i < 200000; ++i) noise.push_back(static_cast<char>('a' + random() % 26));
  const std::vector<std::string> texts = {
      R"({})",
      R"({"a":[1,2.5,-3,true,false,null,"\u00e9\u6f22\ud83d\ude00"],"b":{"c":{}}})",
      R"({"data":{"big":")" + noise + R"("}})",
      deployment("x", 1, "y"),
  };
  for (const auto& text : texts) {
    const Object object = parse(text);
    auto back = packer.unpack(packer.pack(object.json()));
    REQUIRE(back);
    CHECK(back->to_json_string() == object.to_json_string());
  }
}

TEST_CASE("packer: damaged packed bytes give an error, not a crash", "[kube][packed]") {
  ObjectPacker packer;
  CHECK_FALSE(packer.unpack("anything"));  // nothing packed yet: no dictionary
  const std::string packed = packer.pack(parse(deployment("web", 2, "img")).json());
  CHECK_FALSE(packer.unpack(""));
  CHECK_FALSE(packer.unpack(packed.substr(0, packed.size() / 2)));
  std::string longer = packed;
  longer[0] = static_cast<char>(longer[0] + 1);  // the length prefix no longer matches
  auto damaged = packer.unpack(longer);
  REQUIRE_FALSE(damaged);
  CHECK(damaged.error().message.find("packed object is corrupt") != std::string::npos);
}

TEST_CASE("packer: threads pack and unpack at once", "[kube][packed]") {
  ObjectPacker packer;
  (void)packer.pack(parse(deployment("seed", 1, "img")).json());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        // No Catch2 assertions off the main thread (they are not thread-safe).
        auto object = Object::parse(deployment("n" + std::to_string(t) + "-" + std::to_string(i), i, "img"));
        if (!object) {
          ++failures[t];
          continue;
        }
        auto back = packer.unpack(packer.pack(object->json()));
        if (!back || back->to_json_string() != object->to_json_string()) ++failures[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == std::vector<int>(4, 0));
}
