#include "base/text.h"

#include <catch2/catch.hpp>

using myop::base::trim;

TEST_CASE("trim removes leading and trailing white space only", "[base][text]") {
  CHECK(trim("  token\n") == "token");
  CHECK(trim("\t\r\v\fa b\n ") == "a b");
  CHECK(trim("inner  space") == "inner  space");
  CHECK(trim(" \n\t ").empty());
  CHECK(trim("").empty());
}
