#include "base/uuid.h"

#include <cstdint>
#include <cstdio>

#include "base/random.h"

namespace myop::base {

std::string random_uuid() {
  std::mt19937_64& random = thread_random();
  const std::uint64_t high = random();
  const std::uint64_t low = random();
  char text[37];
  std::snprintf(text, sizeof text, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xffff), static_cast<unsigned>(high & 0x0fff),
                static_cast<unsigned>(0x8000 | ((low >> 48) & 0x3fff)),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return text;
}

}  // namespace myop::base
