#include "myresource/spec_hash.h"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

#include "kube/canonical_json.h"

namespace myop::myresource {

std::string spec_hash(const kube::JsonValue& spec) {
  std::string canonical = kube::canonical_json(spec);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_length = 0;
  if (EVP_Digest(canonical.data(), canonical.size(), digest.data(), &digest_length, EVP_sha256(), nullptr) !=
      1) {
    // Only a broken OpenSSL installation gets here; a wrong hash would cause write storms, so be loud.
    throw std::runtime_error("spec_hash: OpenSSL SHA-256 failed");
  }
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(kSpecHashLength);
  for (unsigned int index = 0; index < digest_length && hex.size() < kSpecHashLength; ++index) {
    hex.push_back(kHexDigits[digest[index] >> 4]);
    hex.push_back(kHexDigits[digest[index] & 0x0f]);
  }
  return hex;
}

}  // namespace myop::myresource
