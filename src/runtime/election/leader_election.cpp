#include "runtime/election/leader_election.h"

#include <rapidjson/document.h>

#include <stdexcept>

#include "base/time_format.h"
#include "kube/resource.h"
#include "runtime/election/lease_record.h"
#include "runtime/logging.h"

namespace myop::runtime {

namespace {

// A Lease body. `resource_version` empty for a create.
rapidjson::Document lease_body(const LeaderElectionOptions& options, const std::string& resource_version,
                               const std::string& holder, const std::string& acquire_time,
                               const std::string& renew_time, int duration_seconds, int transitions) {
  LeaseRecord record;
  record.name = options.name;
  record.resource_version = resource_version;
  record.holder = holder;
  record.acquire_time = acquire_time;
  record.renew_time = renew_time;
  record.duration_seconds = duration_seconds;
  record.transitions = transitions;
  return lease_document(options.namespace_name, record);
}

LeaderElectionOptions with_defaults(LeaderElectionOptions options) {
  if (options.name.empty() || options.namespace_name.empty()) {
    throw std::invalid_argument("LeaderElectionOptions: the Lease's namespace_name and name are required");
  }
  if (options.identity.empty()) options.identity = default_holder_identity();
  if (!options.clock) options.clock = base::system_clock();
  return options;
}

}  // namespace

LeaseLeaderElector::LeaseLeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionOptions options)
    : client_(std::move(client)),
      options_(with_defaults(std::move(options))),
      // The renew deadline, less half a retry period: the replica stops writing before it passes.
      watchdog_("leader Lease renew deadline", options_.renew_deadline - options_.retry_period / 2,
                options_.clock, [this] { lose("no successful renewal within the renew deadline"); }),
      renewer_({.name = "leader Lease renewal",
                .first_delay = options_.retry_period,
                .period = options_.retry_period,
                .retry = base::constant_backoff(options_.retry_period),
                .clock = options_.clock},
               [this](const std::stop_token& stop) { return renew(stop); }) {
  if (options_.registry) {
    master_status_ = &prometheus::BuildGauge()
                          .Name("leader_election_master_status")
                          .Help("1 while this replica holds the leader election Lease, else 0")
                          .Register(*options_.registry)
                          .Add({{"name", options_.name}});
    master_status_->Set(0);
  }
}

LeaseLeaderElector::~LeaseLeaderElector() {
  renewer_.stop();
  watchdog_.stop();
}

void LeaseLeaderElector::on_lost(std::function<void()> callback) { on_lost_.set(std::move(callback)); }

void LeaseLeaderElector::set_leading(bool leading) {
  leading_ = leading;
  if (master_status_) master_status_->Set(leading ? 1 : 0);
}

Duration LeaseLeaderElector::jittered(Duration period) {
  std::lock_guard lock(mutex_);
  std::uniform_real_distribution<double> factor(1.0, 1.2);
  return std::chrono::duration_cast<Duration>(period * factor(random_));
}

bool LeaseLeaderElector::may_write() const {
  return leading_ && !lost_ && !watchdog_.overdue(options_.clock->now());
}

LeaseLeaderElector::Attempt LeaseLeaderElector::try_acquire_or_renew(std::stop_token stop) {
  const auto type = kube::resources::leases();
  const TimePoint now_steady = options_.clock->now();
  const std::string now = base::format_micro_time(options_.clock->wall_now());
  const int duration_seconds =
      static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());

  auto current = client_->get(type, options_.namespace_name, options_.name, {}, stop);
  if (!current) {
    if (!kube::is_not_found(current.error())) {
      log(spdlog::level::warn, "Cannot read the leader election Lease",
          {{"lease", options_.namespace_name + "/" + options_.name}, {"error", current.error().to_string()}});
      return Attempt::failed;
    }
    auto body = lease_body(options_, "", options_.identity, now, now, duration_seconds, 0);
    auto created = client_->create(type, options_.namespace_name, body, {}, stop);
    if (!created) return Attempt::failed;
    std::lock_guard lock(mutex_);
    observed_holder_ = options_.identity;
    observed_renew_time_ = now;
    observed_at_ = now_steady;
    observed_transitions_ = 0;
    return Attempt::acquired;
  }

  const LeaseRecord lease = parse_lease(current.value());
  const std::string& holder = lease.holder;
  const std::string& renew_time = lease.renew_time;
  const std::string& acquire_time = lease.acquire_time;
  const int transitions = lease.transitions;
  const std::string& resource_version = lease.resource_version;
  int holder_duration = lease.duration_seconds;
  if (holder_duration <= 0) holder_duration = duration_seconds;

  bool expired;
  {
    std::lock_guard lock(mutex_);
    if (holder != observed_holder_ || renew_time != observed_renew_time_) {
      observed_holder_ = holder;
      observed_renew_time_ = renew_time;
      observed_at_ = now_steady;
    }
    observed_transitions_ = transitions;
    expired = now_steady - observed_at_ >= std::chrono::seconds(holder_duration);
  }
  const bool mine = holder == options_.identity;
  if (!holder.empty() && !mine && !expired) return Attempt::held_by_other;

  auto body = lease_body(options_, resource_version, options_.identity,
                         mine && !acquire_time.empty() ? acquire_time : now, now, duration_seconds,
                         mine ? transitions : transitions + 1);
  auto updated = client_->update(type, options_.namespace_name, body, {}, stop);
  if (!updated) {
    if (!kube::is_conflict(updated.error())) {
      log(spdlog::level::warn, "Cannot update the leader election Lease",
          {{"lease", options_.namespace_name + "/" + options_.name}, {"error", updated.error().to_string()}});
    }
    return Attempt::failed;
  }
  std::lock_guard lock(mutex_);
  observed_holder_ = options_.identity;
  observed_renew_time_ = now;
  observed_at_ = now_steady;
  observed_transitions_ = mine ? transitions : transitions + 1;
  return Attempt::acquired;
}

bool LeaseLeaderElector::acquire(std::stop_token stop) {
  log(spdlog::level::info, "Attempting to acquire the leader Lease",
      {{"lease", options_.namespace_name + "/" + options_.name}, {"identity", options_.identity}});
  while (!stop.stop_requested()) {
    if (try_acquire_or_renew(stop) == Attempt::acquired) {
      watchdog_.renewed(options_.clock->now());
      lost_ = false;
      set_leading(true);
      log(spdlog::level::info, "Acquired the leader Lease",
          {{"lease", options_.namespace_name + "/" + options_.name}, {"identity", options_.identity}});
      renewer_.start();
      // It must fire even while a renewal request hangs.
      watchdog_.start();
      return true;
    }
    options_.clock->sleep_for(stop, jittered(options_.retry_period));
  }
  return false;
}

void LeaseLeaderElector::lose(const std::string& why) {
  if (lost_.exchange(true)) return;
  set_leading(false);
  {
    std::lock_guard lock(mutex_);
    attempt_stop_.request_stop();
  }
  log(spdlog::level::err, "Leader Lease lost",
      {{"lease", options_.namespace_name + "/" + options_.name},
       {"identity", options_.identity},
       {"reason", why}});
  on_lost_();
}

StepResult LeaseLeaderElector::renew(const std::stop_token& stop) {
  if (lost_) return StepResult::done();
  // Its own stop: lose() cancels a renewal in flight.
  std::stop_source attempt;
  {
    std::lock_guard lock(mutex_);
    attempt_stop_ = attempt;
  }
  std::stop_callback forward(stop, [&attempt] { attempt.request_stop(); });
  const Attempt result = try_acquire_or_renew(attempt.get_token());
  if (result == Attempt::held_by_other) {
    lose("another replica holds the Lease");
    return StepResult::done();
  }
  if (lost_) return StepResult::done();
  if (result != Attempt::acquired) return StepResult::retry();
  watchdog_.renewed(options_.clock->now());
  return StepResult::ok();
}

void LeaseLeaderElector::release() {
  renewer_.stop();
  watchdog_.stop();
  if (!leading_ || lost_) return;
  set_leading(false);
  const auto type = kube::resources::leases();
  auto current = client_->get(type, options_.namespace_name, options_.name);
  if (!current) return;
  const LeaseRecord lease = parse_lease(current.value());
  if (lease.holder != options_.identity) return;
  const std::string now = base::format_micro_time(options_.clock->wall_now());
  auto body = lease_body(options_, lease.resource_version, "", now, now, 1, lease.transitions);
  auto released = client_->update(type, options_.namespace_name, body);
  if (released) {
    log(spdlog::level::info, "Released the leader Lease",
        {{"lease", options_.namespace_name + "/" + options_.name}});
  } else {
    log(spdlog::level::warn, "Cannot release the leader Lease", {{"error", released.error().to_string()}});
  }
}

}  // namespace myop::runtime
