#include "base/digest.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

using myop::base::sha256_hex;

TEST_CASE("sha256_hex gives the FIPS 180-2 test vectors in lower-case hex", "[base][digest]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(std::string_view("\0", 1)) != sha256_hex(""));
}

TEST_CASE("sha256 reuses its per-thread context: digests in a row and on several threads stay right",
          "[base][digest]") {
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::string expected = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
  // A digest after another must not carry state over from it.
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(two_blocks) == expected);
  CHECK(sha256_hex(two_blocks) == expected);

  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 200; ++round) results[i] = sha256_hex(round % 2 == 0 ? two_blocks : "abc");
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& result : results)
    CHECK(result == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
