#include "base/random.h"

#include <memory>

namespace myop::base {

std::mt19937_64& thread_random() {
  thread_local std::unique_ptr<std::mt19937_64> generator;
  if (!generator) generator = std::make_unique<std::mt19937_64>(std::random_device{}());
  return *generator;
}

}  // namespace myop::base
