#pragma once
// Message digests (OpenSSL's libcrypto).
#include <array>
#include <string>
#include <string_view>

namespace myop::base {

using Sha256 = std::array<unsigned char, 32>;

// SHA-256 of `data`. Throws std::runtime_error only when libcrypto itself fails (a broken
// installation): a wrong digest would be worse than a loud stop.
Sha256 sha256(std::string_view data);

// SHA-256 of `data` in lower-case hexadecimal (64 characters).
std::string sha256_hex(std::string_view data);

}  // namespace myop::base
