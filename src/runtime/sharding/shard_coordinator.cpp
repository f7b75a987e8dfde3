#include "runtime/sharding/shard_coordinator.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "base/time_format.h"
#include "kube/resource.h"
#include "runtime/logging.h"
#include "runtime/sharding/shard_ring.h"

namespace myop::runtime {

namespace {

// A stop token that fires after `timeout` on `clock` (while the returned thread lives).
std::pair<std::shared_ptr<std::stop_source>, std::jthread> timeout_source(const base::Clock& clock,
                                                                          Duration timeout) {
  auto source = std::make_shared<std::stop_source>();
  std::jthread timer([source, &clock, timeout](std::stop_token timer_stop) {
    if (clock.sleep_for(timer_stop, timeout)) source->request_stop();
  });
  return {source, std::move(timer)};
}

int whole_seconds(Duration duration) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(duration).count());
}

ShardingOptions with_defaults(ShardingOptions options) {
  if (options.namespace_name.empty() || options.name.empty()) {
    throw std::invalid_argument("ShardingOptions: the Leases' namespace_name and name are required");
  }
  if (options.renew_deadline >= options.lease_duration) {
    throw std::invalid_argument("ShardingOptions: renew_deadline must be shorter than lease_duration");
  }
  if (options.identity.empty()) options.identity = default_holder_identity();
  if (!options.clock) options.clock = base::system_clock();
  return options;
}

PeriodicRunnerOptions every_retry_period(std::string name, const ShardingOptions& options,
                                         Duration first_delay) {
  PeriodicRunnerOptions schedule;
  schedule.name = std::move(name);
  schedule.first_delay = first_delay;
  schedule.period = options.retry_period;
  schedule.retry = base::constant_backoff(options.retry_period);
  schedule.clock = options.clock;
  return schedule;
}

}  // namespace

// --- MemberLiveness ---------------------------------------------------------------------------------

void MemberLiveness::observe(const std::string& identity, const std::string& renew_time, TimePoint now) {
  auto [position, inserted] = members_.try_emplace(identity);
  Seen& seen = position->second;
  if (inserted) seen.first_seen = now;
  if (inserted || !seen.has_lease || seen.renew_time != renew_time) {
    seen.renew_time = renew_time;
    seen.changed_at = now;
    seen.has_lease = true;
  }
}

void MemberLiveness::notice(const std::string& identity, TimePoint now) {
  auto [position, inserted] = members_.try_emplace(identity);
  if (inserted) position->second.changed_at = position->second.first_seen = now;
}

Duration MemberLiveness::known_for(const std::string& identity, TimePoint now) const {
  auto found = members_.find(identity);
  return found == members_.end() ? Duration::zero() : now - found->second.first_seen;
}

bool MemberLiveness::expired(const std::string& identity, TimePoint now, Duration lease_duration) const {
  auto found = members_.find(identity);
  return found != members_.end() && now - found->second.changed_at >= lease_duration;
}

std::optional<std::string> MemberLiveness::last_renew_time(const std::string& identity) const {
  auto found = members_.find(identity);
  if (found == members_.end() || !found->second.has_lease) return std::nullopt;
  return found->second.renew_time;
}

void MemberLiveness::forget_older_than(TimePoint now, Duration age) {
  std::erase_if(members_, [&](const auto& entry) { return now - entry.second.changed_at >= age; });
}

// --- ShardCoordinator -------------------------------------------------------------------------------

ShardCoordinator::ShardCoordinator(std::shared_ptr<kube::Client> client, InformerRegistry& informers,
                                   std::shared_ptr<ShardGate> gate, ShardingOptions options)
    : client_(std::move(client)),
      informers_(informers),
      gate_(std::move(gate)),
      options_(with_defaults(std::move(options))),
      slots_(static_cast<std::size_t>(gate_->slot_count())),
      watchdog_("shard member Lease renew deadline", give_up_after(), options_.clock,
                [this] { lose("no successful renewal of the member Lease within the renew deadline"); }),
      renewer_(every_retry_period("shard member Lease renewal", options_, options_.retry_period),
               [this](const std::stop_token& stop) { return renew_member(stop); }),
      worker_(every_retry_period("shard coordinator", options_, Duration::zero()),
              [this](const std::stop_token& stop) { return work(stop); }) {
  InformerScope scope;
  scope.namespaces = {options_.namespace_name};
  scope.label_selector = options_.group_label + "=" + options_.name;
  leases_ = informers_.informer(kube::resources::leases(), scope);
  leases_->subscribe([this](const ObjectEvent&) { wake(); });
  if (options_.registry) {
    const std::string prefix = options_.metrics_prefix;
    slots_owned_ = &prometheus::BuildGauge()
                        .Name(prefix + "_slots_owned")
                        .Help("Shard slots this replica owns and works on now")
                        .Register(*options_.registry)
                        .Add({});
    members_ = &prometheus::BuildGauge()
                    .Name(prefix + "_members")
                    .Help("Live members of the shard group, as this replica sees them")
                    .Register(*options_.registry)
                    .Add({});
    handover_seconds_ = &prometheus::BuildHistogram()
                             .Name(prefix + "_handover_seconds")
                             .Help("From a slot being assigned to this replica to this replica working on it")
                             .Register(*options_.registry)
                             .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                                                              10, 20, 30, 60, 120});
  }
}

ShardCoordinator::~ShardCoordinator() {
  worker_.stop();
  watchdog_.stop();
  renewer_.stop();
}

std::string ShardCoordinator::member_lease_name(const std::string& identity) const {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(identity)));
  return options_.name + "-member-" + hash;
}

std::string ShardCoordinator::slot_lease_name(int slot) const {
  char number[8];
  std::snprintf(number, sizeof number, "%02d", slot);
  return options_.name + "-slot-" + number;
}

LeaseRecord ShardCoordinator::new_record(const std::string& name) const {
  LeaseRecord record;
  record.name = name;
  record.duration_seconds = whole_seconds(options_.lease_duration);
  record.labels[options_.group_label] = options_.name;
  return record;
}

void ShardCoordinator::on_lost(std::function<void()> callback) { on_lost_.set(std::move(callback)); }

void ShardCoordinator::on_slot_opened(std::function<void(int slot)> callback) {
  on_slot_opened_.push_back(std::move(callback));
}

void ShardCoordinator::wake() { worker_.trigger(); }

Duration ShardCoordinator::give_up_after() const {
  return options_.renew_deadline - options_.retry_period / 2;
}

bool ShardCoordinator::renew(std::stop_token stop) {
  const auto type = kube::resources::leases();
  const TimePoint sent = options_.clock->now();
  if (joined_) {
    // Woken past the deadline (a paused process): renewing now would make others believe in a member
    // that has already stopped.
    if (watchdog_.overdue(sent)) {
      lose("no successful renewal of the member Lease within the renew deadline");
      return false;
    }
  }
  const std::string now = base::format_micro_time(options_.clock->wall_now());
  LeaseRecord record = new_record(member_lease_name(options_.identity));
  record.holder = options_.identity;
  record.renew_time = now;
  {
    std::lock_guard lock(mutex_);
    record.resource_version = member_resource_version_;
    record.acquire_time = member_acquire_time_.empty() ? now : member_acquire_time_;
  }
  auto written = record.resource_version.empty()
                     ? client_->create(type, options_.namespace_name,
                                       lease_document(options_.namespace_name, record), {}, stop)
                     : client_->update(type, options_.namespace_name,
                                       lease_document(options_.namespace_name, record), {}, stop);
  if (!written) {
    const auto& error = written.error();
    if (kube::is_conflict(error) || kube::is_already_exists(error) || kube::is_not_found(error)) {
      // Someone else wrote it (a stale version of ours, or an expired-member cleanup): read it again
      // and write over it at the next attempt.
      auto current = client_->get(type, options_.namespace_name, record.name, {}, stop);
      std::lock_guard lock(mutex_);
      member_resource_version_ =
          current ? std::string(kube::ObjectView(current.value()).resource_version()) : "";
    } else {
      log(spdlog::level::warn, "Cannot renew the shard member Lease",
          {{"lease", options_.namespace_name + "/" + record.name}, {"error", error.to_string()}});
    }
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    member_resource_version_ = std::string(kube::ObjectView(written.value()).resource_version());
    member_acquire_time_ = record.acquire_time;
  }
  // From when it was sent: the others saw it no earlier than that.
  watchdog_.renewed(sent);
  gate_->extend_deadline(sent + give_up_after());
  return true;
}

bool ShardCoordinator::start(std::stop_token stop) {
  log(spdlog::level::info, "Joining the shard group",
      {{"group", options_.namespace_name + "/" + options_.name}, {"identity", options_.identity}});
  while (!renew(stop)) {
    if (!options_.clock->sleep_for(stop, options_.retry_period)) return false;
  }
  joined_ = true;
  joined_at_ = options_.clock->now();
  renewer_.start();
  // It must fire even while a renewal request hangs.
  watchdog_.start();
  worker_.start();
  return true;
}

StepResult ShardCoordinator::renew_member(const std::stop_token& stop) {
  if (lost_) return StepResult::done();
  // A renewal that hangs is cut at the deadline by the watchdog's loss; this one is cancelled then.
  const bool renewed = renew(stop);
  if (lost_) return StepResult::done();
  return renewed ? StepResult::ok() : StepResult::retry();
}

void ShardCoordinator::lose(const std::string& why) {
  if (lost_.exchange(true)) return;
  gate_->close();
  if (slots_owned_) slots_owned_->Set(0);
  log(spdlog::level::err, "Shard membership lost, stopped writing",
      {{"group", options_.namespace_name + "/" + options_.name},
       {"identity", options_.identity},
       {"reason", why}});
  wake();
  on_lost_();
}

StepResult ShardCoordinator::work(const std::stop_token& stop) {
  if (lost_) return StepResult::done();
  step(stop);
  return lost_ ? StepResult::done() : StepResult::ok();
}

void ShardCoordinator::start_caches(int slot) {
  for (const auto& set : informers_.sharded()) {
    set->add_slot(slot)->on_synced([this] { wake(); });
  }
}

void ShardCoordinator::drop_caches(int slot) {
  for (const auto& set : informers_.sharded()) set->remove_slot(slot);
}

bool ShardCoordinator::caches_synced(int slot) const {
  return std::ranges::all_of(informers_.sharded(),
                             [slot](const auto& set) { return set->slot_synced(slot); });
}

bool ShardCoordinator::try_acquire(int slot, const std::optional<LeaseRecord>& lease, TimePoint now,
                                   std::stop_token stop) {
  const auto type = kube::resources::leases();
  const std::string time = base::format_micro_time(options_.clock->wall_now());
  LeaseRecord record = new_record(slot_lease_name(slot));
  record.holder = options_.identity;
  record.acquire_time = time;
  record.renew_time = time;
  if (!lease) {
    auto created = client_->create(type, options_.namespace_name,
                                   lease_document(options_.namespace_name, record), {}, stop);
    if (!created) slots_[static_cast<std::size_t>(slot)].acquisition_unsettled = true;
    return created.ok();
  }
  if (lease->holder == options_.identity) return true;
  if (!lease->holder.empty()) {
    liveness_.notice(lease->holder, now);
    if (!liveness_.expired(lease->holder, now, options_.lease_duration)) return false;
    // Looks expired from here; make sure with a fresh read that it is not our watch that stalled.
    auto member = client_->get(type, options_.namespace_name, member_lease_name(lease->holder), {}, stop);
    if (member) {
      const LeaseRecord current = parse_lease(member.value());
      if (current.holder == lease->holder && current.renew_time != liveness_.last_renew_time(lease->holder)) {
        liveness_.observe(lease->holder, current.renew_time, now);
        return false;
      }
    } else if (!kube::is_not_found(member.error())) {
      return false;
    }
    log(spdlog::level::info, "Taking over a shard slot from an expired member",
        {{"slot", std::to_string(slot)}, {"from", lease->holder}});
  }
  record.resource_version = lease->resource_version;
  record.transitions = lease->transitions + 1;
  auto updated = client_->update(type, options_.namespace_name,
                                 lease_document(options_.namespace_name, record), {}, stop);
  if (!updated) slots_[static_cast<std::size_t>(slot)].acquisition_unsettled = true;
  return updated.ok();
}

bool ShardCoordinator::release(int slot, std::stop_token stop) {
  const auto type = kube::resources::leases();
  auto current = client_->get(type, options_.namespace_name, slot_lease_name(slot), {}, stop);
  if (!current) return kube::is_not_found(current.error());
  LeaseRecord record = parse_lease(current.value());
  if (record.holder != options_.identity) return true;  // not ours any more
  record.holder.clear();
  record.renew_time = base::format_micro_time(options_.clock->wall_now());
  auto released = client_->update(type, options_.namespace_name,
                                  lease_document(options_.namespace_name, record), {}, stop);
  if (!released) {
    log(spdlog::level::warn, "Cannot free a shard slot Lease",
        {{"slot", std::to_string(slot)}, {"error", released.error().to_string()}});
    return false;
  }
  return true;
}

bool ShardCoordinator::let_go(int slot, std::stop_token drain_stop, std::stop_token release_stop) {
  Slot& state = slots_[static_cast<std::size_t>(slot)];
  switch (state.state) {
    case SlotState::idle:
    case SlotState::prefetching:
      if (state.state == SlotState::prefetching) drop_caches(slot);
      state.state = SlotState::idle;
      // Not ours, unless a write taking it landed although its answer never came (seen when a
      // replica stopped while taking a slot: the Lease stayed held until it expired).
      if (!state.acquisition_unsettled) return true;
      if (!release(slot, release_stop)) return false;
      state.acquisition_unsettled = false;
      return true;
    case SlotState::active:
    case SlotState::acquired:
      if (!gate_->deactivate(slot, drain_stop)) return false;
      drop_caches(slot);
      state.state = SlotState::releasing;
      [[fallthrough]];
    case SlotState::releasing:
      if (!release(slot, release_stop)) return false;
      state.state = SlotState::idle;
      return true;
  }
  return false;
}

void ShardCoordinator::collect_expired_members(const std::vector<LeaseRecord>& members, TimePoint now,
                                               std::stop_token stop) {
  // A member Lease nobody renewed for ten lease durations belongs to a process long gone (a crash;
  // a clean stop deletes its own). Deleting it keeps the group's Lease list short.
  const Duration age = options_.lease_duration * 10;
  for (const auto& member : members) {
    if (member.holder == options_.identity || !liveness_.expired(member.holder, now, age)) continue;
    kube::DeleteOptions options;
    options.precondition_resource_version = member.resource_version;
    if (client_->remove(kube::resources::leases(), options_.namespace_name, member.name, options, stop)) {
      log(spdlog::level::info, "Deleted the Lease of a member gone for long", {{"member", member.holder}});
    }
  }
  liveness_.forget_older_than(now, age * 2);
}

void ShardCoordinator::step(std::stop_token stop) {
  const TimePoint now = options_.clock->now();
  const std::string member_prefix = options_.name + "-member-";
  std::vector<LeaseRecord> members;
  std::map<int, LeaseRecord> slot_leases;
  std::map<std::string, int> slot_numbers;
  for (int slot = 0; slot < gate_->slot_count(); ++slot) slot_numbers.emplace(slot_lease_name(slot), slot);
  leases_->for_each([&](const ObjectPointer& object) {
    LeaseRecord record = parse_lease(object->json());
    if (record.name.rfind(member_prefix, 0) == 0) {
      if (!record.holder.empty()) members.push_back(std::move(record));
    } else if (auto slot = slot_numbers.find(record.name); slot != slot_numbers.end()) {
      slot_leases.emplace(slot->second, std::move(record));
    }
  });

  std::vector<std::string> live{options_.identity};
  bool joining = now - joined_at_ < options_.join_window;
  for (const auto& member : members) {
    if (member.holder == options_.identity) continue;
    liveness_.observe(member.holder, member.renew_time, now);
    if (liveness_.expired(member.holder, now, options_.lease_duration)) continue;
    live.push_back(member.holder);
    if (liveness_.known_for(member.holder, now) < options_.join_window) joining = true;
  }
  if (members_) members_->Set(static_cast<double>(live.size()));
  // While a member joins, the table stands still (slots in handover go on by it): members started
  // together all count once the first window ends, instead of taking slots one join at a time. The
  // loop looks again within retry_period, or at once when a Lease changes.
  if (!joining || assignment_.empty()) {
    if (joining) {
      collect_expired_members(members, now, stop);
      return;
    }
    assignment_ = assign_slots(live, gate_->slot_count());
  }
  const auto& assignment = assignment_;

  // Slots moving away first: they free Leases others are waiting for.
  bool caches_dropped = false;
  for (int slot = 0; slot < gate_->slot_count() && !stop.stop_requested() && !lost_; ++slot) {
    const SlotState state = slots_[static_cast<std::size_t>(slot)].state;
    if (assignment[static_cast<std::size_t>(slot)] == options_.identity) continue;
    if (state == SlotState::active || state == SlotState::acquired) {
      log(spdlog::level::info, "Handing a shard slot over",
          {{"slot", std::to_string(slot)}, {"to", assignment[static_cast<std::size_t>(slot)]}});
    }
    caches_dropped = caches_dropped || (state != SlotState::idle && state != SlotState::releasing);
    let_go(slot, stop, stop);
  }
  if (stop.stop_requested()) return;
  bool slot_opened = false;
  for (int slot = 0; slot < gate_->slot_count() && !stop.stop_requested() && !lost_; ++slot) {
    Slot& state = slots_[static_cast<std::size_t>(slot)];
    if (assignment[static_cast<std::size_t>(slot)] != options_.identity) continue;
    if (state.state == SlotState::idle || state.state == SlotState::releasing) {
      // (releasing: it came back to us before its Lease was freed; the Lease is still ours.)
      start_caches(slot);
      state.wanted_since = now;
      state.state = state.state == SlotState::releasing ? SlotState::acquired : SlotState::prefetching;
    }
    if (state.state == SlotState::prefetching) {
      auto lease = slot_leases.find(slot);
      std::optional<LeaseRecord> current;
      if (lease != slot_leases.end()) current = lease->second;
      if (try_acquire(slot, current, now, stop)) {
        state.state = SlotState::acquired;
        state.acquisition_unsettled = false;
      }
    }
    if (state.state == SlotState::acquired && caches_synced(slot) && !lost_) {
      gate_->activate(slot);
      for (const auto& set : informers_.sharded()) {
        if (set->redelivered_on_open()) set->redeliver_slot(slot);
      }
      for (const auto& opened : on_slot_opened_) opened(slot);
      state.state = SlotState::active;
      slot_opened = true;
      const double seconds = to_seconds(options_.clock->now() - state.wanted_since);
      if (handover_seconds_) handover_seconds_->Observe(seconds);
      log(spdlog::level::info, "Working on a shard slot",
          {{"slot", std::to_string(slot)}, {"handoverSeconds", std::to_string(seconds)}});
    }
  }
  if (slots_owned_ && !lost_) slots_owned_->Set(static_cast<double>(gate_->active_slots().size()));
#if defined(__GLIBC__)
  // glibc keeps the pages a program freed unless asked, and a replica frees a lot at two moments:
  // when a slot leaves (its caches are thousands of small objects over the whole heap), and when
  // slots open (their caches were filled by lists running at once, whose pages of several MiB each
  // were freed in the middle of the heap; bench/run --replicas at 10,000 objects: 1.5-2 MiB less per
  // replica with this trim than without). Give the pages back once per step (not on shutdown: the
  // process is about to end), so a replica holds its share.
  if ((caches_dropped || slot_opened) && !stop.stop_requested()) malloc_trim(0);
#endif
  collect_expired_members(members, now, stop);
}

void ShardCoordinator::stop(Duration grace) {
  worker_.stop();
  if (!joined_ || lost_) {
    watchdog_.stop();
    renewer_.stop();
    // Lost: our slots stay ours on paper until our membership expires in the others' eyes, which
    // deleting the member Lease does not shorten (they judge by the renewals they saw); it only lets
    // them plan without us at once. Best effort: the API server may be what we lost.
    if (lost_) {
      auto [give_up, timer] = timeout_source(*options_.clock, options_.retry_period);
      (void)client_->remove(kube::resources::leases(), options_.namespace_name,
                            member_lease_name(options_.identity), {}, give_up->get_token());
    }
    return;
  }
  // Leave while still renewing: draining may take up to `grace`.
  auto [give_up, timer] = timeout_source(*options_.clock, grace);
  bool all_freed = true;
  for (int slot = 0; slot < gate_->slot_count(); ++slot) {
    // A slot not drained in time keeps its Lease, which expires with the membership.
    if (!let_go(slot, give_up->get_token(), {})) all_freed = false;
  }
  timer.request_stop();
  gate_->close();
  if (slots_owned_) slots_owned_->Set(0);
  watchdog_.stop();
  renewer_.stop();
  if (all_freed) {
    kube::DeleteOptions options;
    std::lock_guard lock(mutex_);
    options.precondition_resource_version = member_resource_version_;
    auto deleted = client_->remove(kube::resources::leases(), options_.namespace_name,
                                   member_lease_name(options_.identity), options);
    if (!deleted) {
      log(spdlog::level::warn, "Cannot delete the shard member Lease",
          {{"error", deleted.error().to_string()}});
    }
  }
  log(spdlog::level::info, "Left the shard group",
      {{"group", options_.namespace_name + "/" + options_.name},
       {"allSlotsFreed", all_freed ? "true" : "false"}});
}

}  // namespace myop::runtime
