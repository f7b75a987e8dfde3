#pragma once
// Turns SIGTERM and SIGINT into a stop request. A second signal exits at once (exit code 1), as
// controller-runtime does, for an operator stuck in shutdown.
//
// Construct it in main() before any other thread starts: it blocks the signals for the whole
// process so that only its own thread receives them.
#include <atomic>
#include <stop_token>
#include <thread>

namespace myop::runtime {

class SignalWatcher {
 public:
  explicit SignalWatcher(std::stop_source stop);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // The signal that requested the stop, 0 if none yet.
  int received() const { return received_; }

 private:
  std::stop_source stop_;
  std::atomic<int> received_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace myop::runtime
