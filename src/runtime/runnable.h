#pragma once
// Something the manager starts and stops: a cache (started first; the controllers wait until every
// cache has synced), or work that writes and so needs leadership (started with the controllers once
// this replica leads, stopped, with in-flight writes cancelled, when it stops leading).
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
  // True for work that writes: the manager runs it only while this replica holds leadership.
  virtual bool needs_leader_election() const { return false; }
};

}  // namespace myop::runtime
