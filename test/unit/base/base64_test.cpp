// base64 as Kubernetes writes it (src/base/base64.h): RFC 4648's test vectors both ways, and what is
// refused.
#include "base/base64.h"

#include <catch2/catch.hpp>

using myop::base::decode_base64;
using myop::base::encode_base64;

TEST_CASE("base64 encodes and decodes RFC 4648's vectors", "[base][base64]") {
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    CHECK(encode_base64(plain) == encoded);
    CHECK(decode_base64(encoded) == plain);
  }
  std::string bytes;
  for (int value = 0; value < 256; ++value) bytes += static_cast<char>(value);
  CHECK(decode_base64(encode_base64(bytes)) == bytes);
  CHECK(encode_base64("\xff\xfe") == "//4=");
}

TEST_CASE("base64 decoding ignores line breaks and refuses what is not base64", "[base][base64]") {
  CHECK(decode_base64("Zm9v\nYmFy\n") == "foobar");
  CHECK_FALSE(decode_base64("Zm9v!"));
  CHECK_FALSE(decode_base64("Zm9"));
  CHECK_FALSE(decode_base64("Zg==Zg=="));
  CHECK_FALSE(decode_base64("Z==="));
}
