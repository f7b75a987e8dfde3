#include "runtime/manager/signal_watcher.h"

#include <pthread.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): sigset_t and pthread_sigmask are POSIX
#include <unistd.h>

#include <ctime>

#include "runtime/logging.h"

namespace myop::runtime {

namespace {

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

SignalWatcher::SignalWatcher(std::stop_source stop) : stop_(std::move(stop)) {
  sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  thread_ = std::thread([this] {
    const sigset_t watched = stop_signals();
    const timespec poll{0, 200'000'000};
    while (!done_) {
      const int signal = sigtimedwait(&watched, nullptr, &poll);
      if (signal <= 0) continue;
      if (received_ != 0) {
        log(spdlog::level::err, "Second signal received, exiting now", {{"signal", std::to_string(signal)}});
        _exit(1);
      }
      received_ = signal;
      log(spdlog::level::info, "Signal received, shutting down gracefully",
          {{"signal", std::to_string(signal)}});
      stop_.request_stop();
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace myop::runtime
