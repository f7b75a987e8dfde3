#pragma once
// Something the manager starts and stops, in a group of its kind (runtime/manager/runnable_group.h): a
// server, a certificate source, a cache (the controllers wait until every cache has synced), or work that
// writes and so needs leadership (started with the controllers once this replica leads, stopped, with
// in-flight writes cancelled, when it stops leading).
#include <functional>
#include <string>
#include <vector>

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
  // Why it cannot do its work now, one line each, for /readyz (empty when it can). Caches: a list or
  // watch that keeps failing (runtime/cache/watch_health.h), so a synced cache that went stale says so.
  virtual std::vector<std::string> problems() const { return {}; }
  // True for work that writes: the manager runs it only while this replica holds leadership.
  virtual bool needs_leader_election() const { return false; }
  // Calls `callback` once, when has_synced() turns true (at once when it already is), from the
  // thread that synced it, so the manager waits for caches without polling. The callback must not
  // block.
  virtual void on_synced(std::function<void()> callback) = 0;
  // Calls `callback` once with the reason, when it has failed for good (a server that cannot bind, a
  // certificate that does not load): the manager then stops everything, naming this runnable. Set
  // before start(), which may call it itself; later from any thread. Default: it never fails.
  virtual void on_failed(const std::function<void(std::string)>& callback) { static_cast<void>(callback); }
};

}  // namespace myop::runtime
