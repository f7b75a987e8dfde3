#pragma once
// The manager's view of leader election, so it can be tested without an API server.
// runtime/election/leader_election.h implements it on a coordination.k8s.io Lease.
#include <functional>
#include <stop_token>

namespace myop::runtime {

class LeaderElector {
 public:
  virtual ~LeaderElector() = default;
  // Blocks until this replica leads (true) or `stop` is requested (false). Once leading, the
  // elector renews in the background.
  virtual bool acquire(std::stop_token stop) = 0;
  // Called once, from the elector's thread, when leadership is lost (renewal failed until the
  // renew deadline, or another holder took the lease). The replica must stop writing at once.
  virtual void on_lost(std::function<void()> callback) = 0;
  virtual bool is_leader() const = 0;
  // Stops renewing and, if leading, gives the lease up so a standby takes over without waiting.
  virtual void release() = 0;
};

}  // namespace myop::runtime
