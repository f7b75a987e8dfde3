#include "base/uuid.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

TEST_CASE("random_uuid gives version-4 UUIDs in lower case, each new", "[base][uuid]") {
  const std::regex version4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const auto uuid = myop::base::random_uuid();
    CHECK(std::regex_match(uuid, version4));
    seen.insert(uuid);
  }
  CHECK(seen.size() == 100);
}
