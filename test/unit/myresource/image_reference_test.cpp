#include "myresource/image_reference.h"

#include <catch2/catch.hpp>
#include <string>

using namespace myop::myresource;

namespace {
const std::string kDigest = "sha256:" + std::string(64, 'a');
}

TEST_CASE("parse_image_reference splits registry port, repository, tag and digest", "[myresource][image]") {
  struct Case {
    std::string image;
    std::string repository;
    std::string tag;
    std::string digest;
  };
  auto [image, repository, tag, digest] = GENERATE_COPY(values<Case>({
      {"nginx:1.27", "nginx", "1.27", ""},
      {"reg:5000/app", "reg:5000/app", "", ""},  // the port is not a tag
      {"reg:5000/app:1.0", "reg:5000/app", "1.0", ""},
      {"reg:5000/team/app@" + kDigest, "reg:5000/team/app", "", kDigest},
      {"app:1.0@" + kDigest, "app", "1.0", kDigest},
      {"registry.example.com/team/app:v1.2-rc.1", "registry.example.com/team/app", "v1.2-rc.1", ""},
      {"localhost/app:1", "localhost/app", "1", ""},
      {"a__b/c-d--e:1", "a__b/c-d--e", "1", ""},
      {"reg:5000", "reg", "5000", ""},  // grammar: repository "reg", tag "5000"
  }));
  CAPTURE(image);
  auto reference = parse_image_reference(image);
  REQUIRE(reference);
  CHECK(reference->repository == repository);
  CHECK(reference->tag == tag);
  CHECK(reference->digest == digest);
}

TEST_CASE("parse_image_reference refuses malformed references", "[myresource][image]") {
  auto image =
      GENERATE(as<std::string>{}, "", "Nginx:1", "nginx:1 ", " nginx:1", "app:-bad", "app:.bad",
               "app@sha256:short", "app:1.0/x", "a___b:1", "a.-b:1", "app:", "/app:1", "app/:1",
               "reg:port/app:1", "-reg/app:1", "app@" + std::string(64, 'a'), "a:" + std::string(129, 't'));
  CAPTURE(image);
  CHECK_FALSE(parse_image_reference(image));
}

TEST_CASE("image_problem accepts pinned images and explains the rest", "[myresource][image]") {
  CHECK(image_problem("nginx:1.27").empty());
  CHECK(image_problem("reg:5000/app:1.0").empty());
  CHECK(image_problem("app@" + kDigest).empty());
  CHECK(image_problem("app:latest-2").empty());
  CHECK_THAT(image_problem("reg:5000/app"), Catch::Contains("must carry a tag or a digest"));
  CHECK_THAT(image_problem("nginx"), Catch::Contains("must carry a tag or a digest"));
  CHECK_THAT(image_problem("nginx:latest"), Catch::Contains(":latest"));
  CHECK_THAT(image_problem("app:latest@" + kDigest), Catch::Contains(":latest"));
  CHECK_THAT(image_problem("Nginx:1"), Catch::Contains("not a valid image reference"));
}

TEST_CASE("is_valid_tag follows the tag grammar", "[myresource][image]") {
  CHECK(is_valid_tag("1.8.0"));
  CHECK(is_valid_tag("v1_2-rc.3"));
  CHECK(is_valid_tag("_x"));
  CHECK(is_valid_tag(std::string(128, 'a')));
  CHECK_FALSE(is_valid_tag(""));
  CHECK_FALSE(is_valid_tag(".1"));
  CHECK_FALSE(is_valid_tag("-1"));
  CHECK_FALSE(is_valid_tag("1/2"));
  CHECK_FALSE(is_valid_tag("1:2"));
  CHECK_FALSE(is_valid_tag(std::string(129, 'a')));
}

TEST_CASE("with_tag keeps the registry port and drops the digest", "[myresource][image]") {
  CHECK(with_tag(*parse_image_reference("reg:5000/team/app:1.0"), "1.1") == "reg:5000/team/app:1.1");
  CHECK(with_tag(*parse_image_reference("reg:5000/app"), "2") == "reg:5000/app:2");
  CHECK(with_tag(*parse_image_reference("app:1.0@" + kDigest), "1.1") == "app:1.1");
  CHECK(with_tag(*parse_image_reference("app@" + kDigest), "1.1") == "app:1.1");
}
