#include "runtime/manager/runnable_group.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "runtime/logging.h"

namespace myop::runtime {

const char* group_name(RunnableGroup group) {
  switch (group) {
    case RunnableGroup::servers:
      return "servers";
    case RunnableGroup::webhook_certificates:
      return "webhook certificates";
    case RunnableGroup::webhooks:
      return "webhooks";
    case RunnableGroup::caches:
      return "caches";
    case RunnableGroup::leader_only:
      return "leader-only";
  }
  return "unknown";
}

namespace {

constexpr std::array<RunnableGroup, kRunnableGroups> kStartOrder = {
    RunnableGroup::servers, RunnableGroup::webhook_certificates, RunnableGroup::webhooks,
    RunnableGroup::caches, RunnableGroup::leader_only};

constexpr std::array<RunnableGroup, kRunnableGroups> kStopOrder = {
    RunnableGroup::leader_only, RunnableGroup::caches, RunnableGroup::webhooks,
    RunnableGroup::webhook_certificates, RunnableGroup::servers};

std::size_t index(RunnableGroup group) { return static_cast<std::size_t>(group); }

}  // namespace

struct RunnableGroups::State {
  std::mutex mutex;
  std::condition_variable_any changed;  // a runnable synced
  std::optional<RunnableFailure> failure;
  std::atomic<bool> lease_lost{false};
  std::stop_source stopping;  // the caller's stop, or the first failure

  void fail(std::string runnable, std::string error, bool lease) {
    if (lease) lease_lost = true;
    {
      std::lock_guard lock(mutex);
      if (failure || stopping.stop_requested()) return;
      failure = RunnableFailure{runnable, error};
    }
    log(spdlog::level::err, "A runnable failed, stopping", {{"runnable", runnable}, {"error", error}});
    stopping.request_stop();
  }
};

RunnableGroups::RunnableGroups(RunnableGroupsOptions options)
    : options_(std::move(options)), state_(std::make_shared<State>()) {
  if (!options_.clock) options_.clock = base::system_clock();
}

void RunnableGroups::add(RunnableGroup group, std::shared_ptr<Runnable> runnable) {
  groups_.at(index(group)).push_back(std::move(runnable));
}

void RunnableGroups::fail(std::string runnable, std::string error) {
  state_->fail(std::move(runnable), std::move(error), false);
}

void RunnableGroups::lose_lease(std::string runnable, std::string error) {
  state_->fail(std::move(runnable), std::move(error), true);
}

bool RunnableGroups::lease_lost() const { return state_->lease_lost; }

std::stop_token RunnableGroups::stopping() const { return state_->stopping.get_token(); }

bool RunnableGroups::ready(RunnableGroup group) const { return ready_.at(index(group)); }

std::optional<RunnableFailure> RunnableGroups::run(std::stop_token stop) {
  const std::shared_ptr<State> state = state_;
  std::stop_callback forward(stop, [state] { state->stopping.request_stop(); });
  const std::stop_token stopping = state->stopping.get_token();
  if (options_.leader_elector) {
    options_.leader_elector->on_lost([state] {
      log(spdlog::level::err, "Leader election lost, stopping", {});
      state->fail("leader election", "leadership lost", true);
    });
  }
  bool started = true;
  for (const RunnableGroup group : kStartOrder) {
    started = start_group(group, stopping);
    if (!started) break;
  }
  if (started) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    wake.wait(lock, stopping, [] { return false; });
  }
  stop_started();
  std::lock_guard lock(state->mutex);
  return state->failure;
}

bool RunnableGroups::start_group(RunnableGroup group, const std::stop_token& stopping) {
  if (group == RunnableGroup::leader_only && options_.leader_elector) {
    log(spdlog::level::info, "Waiting for leadership", {});
    if (!options_.leader_elector->acquire(stopping)) return false;
    log(spdlog::level::info, "Became leader, starting the leader-only runnables", {});
  }
  const auto& runnables = groups_.at(index(group));
  for (const auto& runnable : runnables) {
    if (stopping.stop_requested()) return false;
    runnable->on_failed([state = state_, name = runnable->name()](std::string error) {
      state->fail(name, std::move(error), false);
    });
    log(spdlog::level::info, "Starting", {{"runnable", runnable->name()}, {"group", group_name(group)}});
    ++started_.at(index(group));  // stopped at the end even if its start fails half-way
    runnable->start();
  }
  if (stopping.stop_requested()) return false;
  if (group != RunnableGroup::leader_only && !wait_until_synced(group, stopping)) return false;
  ready_.at(index(group)) = true;
  log(spdlog::level::info, "Started",
      {{"group", group_name(group)}, {"runnables", std::to_string(runnables.size())}});
  return true;
}

bool RunnableGroups::wait_until_synced(RunnableGroup group, const std::stop_token& stopping) {
  const auto& runnables = groups_.at(index(group));
  for (const auto& runnable : runnables) {
    runnable->on_synced([state = state_] {
      std::lock_guard lock(state->mutex);
      state->changed.notify_all();
    });
  }
  const auto all_synced = [&runnables] {
    return std::all_of(runnables.begin(), runnables.end(),
                       [](const auto& runnable) { return runnable->has_synced(); });
  };
  std::unique_lock lock(state_->mutex);
  const bool synced =
      options_.clock->wait_for(state_->changed, lock, stopping, options_.ready_timeout, all_synced);
  lock.unlock();
  if (stopping.stop_requested()) return false;
  if (synced) return true;
  std::string first;
  for (const auto& runnable : runnables) {
    if (runnable->has_synced()) continue;
    log(spdlog::level::err, "Timed out waiting for a runnable to sync",
        {{"runnable", runnable->name()}, {"group", group_name(group)}});
    if (first.empty()) first = runnable->name();
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.ready_timeout).count();
  state_->fail(first, "not synced within " + std::to_string(seconds) + " s", false);
  return false;
}

void RunnableGroups::stop_started() {
  for (const RunnableGroup group : kStopOrder) {
    const auto& runnables = groups_.at(index(group));
    for (std::size_t count = started_.at(index(group)); count > 0; --count) {
      const auto& runnable = runnables.at(count - 1);
      log(spdlog::level::info, "Stopping", {{"runnable", runnable->name()}, {"group", group_name(group)}});
      runnable->stop();
    }
    // Released once nothing that writes runs, before the caches go: a standby takes over at once.
    if (group == RunnableGroup::leader_only && options_.leader_elector && !lease_lost()) {
      options_.leader_elector->release();
    }
  }
}

}  // namespace myop::runtime
