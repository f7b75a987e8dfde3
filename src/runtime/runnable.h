#pragma once
// Something the manager starts before the controllers and stops after them: an informer/cache.
#include <string>

namespace myop::runtime {

class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual std::string name() const = 0;
  // Starts in the background; returns at once.
  virtual void start() = 0;
  virtual void stop() = 0;
  // True once the initial state has been loaded (for caches: after the first full list).
  virtual bool has_synced() const = 0;
};

}  // namespace myop::runtime
