#include "runtime/manager/periodic_runner.h"

#include <exception>
#include <utility>

#include "runtime/logging.h"

namespace myop::runtime {

PeriodicRunner::PeriodicRunner(PeriodicRunnerOptions options, Step step)
    : options_(std::move(options)), step_(std::move(step)) {
  if (!options_.clock) options_.clock = base::system_clock();
}

PeriodicRunner::~PeriodicRunner() { stop(); }

void PeriodicRunner::start() {
  std::lock_guard lifecycle(lifecycle_mutex_);
  if (thread_.joinable()) {
    std::lock_guard lock(mutex_);
    if (running_) return;
  }
  if (thread_.joinable()) thread_.join();  // a thread that was done
  std::lock_guard lock(mutex_);
  triggered_ = false;
  running_ = true;
  thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
  stop_ = thread_.get_stop_source();
  thread_id_ = thread_.get_id();
}

void PeriodicRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    if (std::this_thread::get_id() == thread_id_) {
      stop_.request_stop();  // joined by whoever stops it from outside, or the destructor
      return;
    }
  }
  std::lock_guard lifecycle(lifecycle_mutex_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_.request_stop();
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard lock(mutex_);
  thread_ = {};
  thread_id_ = {};
  running_ = false;
}

void PeriodicRunner::trigger() {
  {
    std::lock_guard lock(mutex_);
    triggered_ = true;
  }
  wake_.notify_all();
}

bool PeriodicRunner::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

StepResult PeriodicRunner::run_step(const std::stop_token& stop) {
  try {
    return step_(stop);
  } catch (const std::exception& exception) {
    log(spdlog::level::err, "A periodic step failed",
        {{"runner", options_.name}, {"error", exception.what()}});
  } catch (...) {
    log(spdlog::level::err, "A periodic step failed",
        {{"runner", options_.name}, {"error", "unknown exception"}});
  }
  return StepResult::retry();
}

void PeriodicRunner::run(const std::stop_token& stop) {
  base::Backoff retry(options_.retry);
  Duration delay = options_.first_delay;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      options_.clock->wait_for(wake_, lock, stop, delay, [this] { return triggered_; });
      triggered_ = false;
    }
    if (stop.stop_requested()) break;
    const StepResult result = run_step(stop);
    if (stop.stop_requested() || result.kind() == StepResult::Kind::done) break;
    switch (result.kind()) {
      case StepResult::Kind::ok:
        retry.reset();
        delay = options_.period;
        break;
      case StepResult::Kind::retry:
        delay = retry.next_delay();
        break;
      case StepResult::Kind::after:
        delay = result.delay();
        break;
      case StepResult::Kind::done:
        break;
    }
  }
  std::lock_guard lock(mutex_);
  running_ = false;
}

}  // namespace myop::runtime
