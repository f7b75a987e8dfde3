#include "base/digest.h"

#include <catch2/catch.hpp>

using myop::base::sha256_hex;

TEST_CASE("sha256_hex gives the FIPS 180-2 test vectors in lower-case hex", "[base][digest]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(std::string_view("\0", 1)) != sha256_hex(""));
}
