#include "myresource/spec_hash.h"

#include "base/digest.h"
#include "kube/canonical_json.h"

namespace myop::myresource {

std::string spec_hash(const kube::JsonValue& spec) {
  // Throws only when libcrypto fails: a wrong hash would cause write storms, so be loud.
  return base::sha256_hex(kube::canonical_json(spec)).substr(0, kSpecHashLength);
}

}  // namespace myop::myresource
