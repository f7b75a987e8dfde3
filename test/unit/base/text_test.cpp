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

TEST_CASE("media_type is a Content-Type without its parameters", "[base][text]") {
  using myop::base::media_type;
  CHECK(media_type("application/json") == "application/json");
  CHECK(media_type("application/vnd.kubernetes.protobuf;stream=watch") ==
        "application/vnd.kubernetes.protobuf");
  CHECK(media_type(" application/cbor-seq ; charset=x") == "application/cbor-seq");
  CHECK(media_type("").empty());
}

TEST_CASE("percent_encode keeps the unreserved characters and encodes every other byte", "[base][text]") {
  using myop::base::percent_encode;
  CHECK(percent_encode("AZaz09-._~") == "AZaz09-._~");
  CHECK(percent_encode("a b/c?d#e%") == "a%20b%2Fc%3Fd%23e%25");
  CHECK(percent_encode("app in (a,b),tier!=x") == "app%20in%20%28a%2Cb%29%2Ctier%21%3Dx");
  CHECK(percent_encode("\xc3\xa9") == "%C3%A9");  // UTF-8 bytes, upper-case hex
  CHECK(percent_encode(std::string_view("\0", 1)) == "%00");
  CHECK(percent_encode("").empty());
}

TEST_CASE("percent_encode keeps the characters it is told to keep", "[base][text]") {
  using myop::base::percent_encode;
  CHECK(percent_encode("system:node:a@b") == "system%3Anode%3Aa%40b");
  CHECK(percent_encode("system:node:a@b", ":@") == "system:node:a@b");
  CHECK(percent_encode("a/b:c", ":@") == "a%2Fb:c");
}

TEST_CASE("to_hex writes two digits per byte, lower case unless told otherwise", "[base][text]") {
  using myop::base::to_hex;
  const unsigned char bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  CHECK(to_hex(bytes) == "000fa0ff");
  CHECK(to_hex(bytes, {.upper_case = true, .separator = ":"}) == "00:0F:A0:FF");
  CHECK(to_hex(std::span<const unsigned char>()).empty());
}
