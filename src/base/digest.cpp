#include "base/digest.h"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

#include "base/text.h"

namespace myop::base {

namespace {

struct MdFree {
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
};
struct MdContextFree {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

[[noreturn]] void libcrypto_failed() { throw std::runtime_error("SHA-256 failed in OpenSSL's libcrypto"); }

// Fetched once: EVP_sha256() with EVP_Digest looks the algorithm up in the provider store on every
// call (a lock and a search) and makes and frees a context each time (docs/design.md, "Known traps").
const EVP_MD& sha256_algorithm() {
  static const std::unique_ptr<EVP_MD, MdFree> algorithm{EVP_MD_fetch(nullptr, "SHA256", nullptr)};
  if (!algorithm) libcrypto_failed();
  return *algorithm;
}

// One context per thread, reinitialised by each digest; made on first use (a pointer in the
// thread's static TLS, not the context).
EVP_MD_CTX& thread_context() {
  thread_local std::unique_ptr<EVP_MD_CTX, MdContextFree> context;
  if (!context) {
    context.reset(EVP_MD_CTX_new());
    if (!context) libcrypto_failed();
  }
  return *context;
}

}  // namespace

Sha256 sha256(std::string_view data) {
  Sha256 digest{};
  unsigned int length = 0;
  EVP_MD_CTX& context = thread_context();
  if (EVP_DigestInit_ex2(&context, &sha256_algorithm(), nullptr) != 1 ||
      EVP_DigestUpdate(&context, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(&context, digest.data(), &length) != 1 || length != digest.size()) {
    libcrypto_failed();
  }
  return digest;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

}  // namespace myop::base
