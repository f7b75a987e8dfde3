#include "base/digest.h"

#include <openssl/evp.h>

#include <stdexcept>

#include "base/text.h"

namespace myop::base {

Sha256 sha256(std::string_view data) {
  Sha256 digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw std::runtime_error("SHA-256 failed in OpenSSL's libcrypto");
  }
  return digest;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

}  // namespace myop::base
