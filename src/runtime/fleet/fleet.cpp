#include "runtime/fleet/fleet.h"

#include <utility>

#include "base/digest.h"
#include "kube/resource.h"
#include "runtime/logging.h"

namespace myop::runtime::fleet {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text.append(text.empty() ? "" : "; ").append(line);
  return text;
}

}  // namespace

// The name first: FNV-1a's top bits (the slot) hardly move with the last bytes of a string, and member
// names often differ only at their end (member-1, member-2).
std::string member_shard_unit(std::string_view name) { return std::string(name) + "/fleet-member"; }

Fleet::Fleet(InformerRegistry& hub, FleetOptions options) : options_(std::move(options)) {
  if (!options_.clock) options_.clock = base::system_clock();
  if (options_.namespace_name.empty())
    throw std::invalid_argument("FleetOptions: namespace_name (where the kubeconfig Secrets live) is empty");
  if (options_.field_manager.empty()) throw std::invalid_argument("FleetOptions: field_manager is empty");
  if (options_.kubeconfig_secrets) {
    secrets_ = hub.informer(kube::resources::secrets(),
                            InformerScope{{options_.namespace_name}, options_.label, {}, false});
    watch_source(*secrets_, false);
  }
  if (options_.cluster_profiles) {
    profiles_ = hub.informer(cluster_profiles(),
                             InformerScope{{options_.cluster_profiles->namespace_name}, {}, {}, false});
    watch_source(*profiles_, true);
  }
  if (options_.registry) {
    member_ready_ = &prometheus::BuildGauge()
                         .Name("myoperator_fleet_member_ready")
                         .Help(
                             "1 while an engaged member cluster's caches are synced and its list and "
                             "watch work, else 0, by cluster (its kubeconfig Secret's name)")
                         .Register(*options_.registry);
    auto& members = prometheus::BuildGauge()
                        .Name("myoperator_fleet_members")
                        .Help(
                            "Member clusters by state: engaged, or refused (a kubeconfig Secret that "
                            "cannot be used)")
                        .Register(*options_.registry);
    engaged_gauge_ = &members.Add({{"state", "engaged"}});
    refused_gauge_ = &members.Add({{"state", "refused"}});
    changes_ = &prometheus::BuildCounter()
                    .Name("myoperator_fleet_member_changes_total")
                    .Help("Changes of the fleet's membership: engage, disengage, refuse")
                    .Register(*options_.registry);
  }
}

Fleet::~Fleet() { stop(); }

void Fleet::watch_source(InformerSet& source, bool profile) {
  // Subscribed before the registry starts, so the initial list is seen; the Fleet's thread does the work.
  source.subscribe([this, profile](const ObjectEvent& event) {
    if (!event.object) return;
    if (event.type == EventType::deleted) {
      const std::string name =
          profile ? std::string(event.object->namespace_name()) + "/" + std::string(event.object->name())
                  : std::string(event.object->name());
      post({nullptr, name, std::nullopt, profile});
    } else {
      post({event.object, {}, std::nullopt, profile});
    }
  });
}

void Fleet::on_engage(EngageHook hook) { hooks_.push_back(std::move(hook)); }

void Fleet::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Fleet::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
  std::vector<ClusterId> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, member] : members_) ids.push_back(id);
  }
  for (const ClusterId id : ids) disengage(id);
}

bool Fleet::has_synced() const {
  return (!secrets_ || secrets_->has_synced()) && (!profiles_ || profiles_->has_synced());
}

void Fleet::on_synced(std::function<void()> callback) {
  if (secrets_ && profiles_) {
    // Once both have: the second to sync calls back.
    auto remaining = std::make_shared<std::atomic<int>>(2);
    auto shared = std::make_shared<std::function<void()>>(std::move(callback));
    for (const auto& source : {secrets_, profiles_}) {
      source->on_synced([remaining, shared] {
        if (remaining->fetch_sub(1) == 1) (*shared)();
      });
    }
  } else if (secrets_) {
    secrets_->on_synced(std::move(callback));
  } else if (profiles_) {
    profiles_->on_synced(std::move(callback));
  } else {
    callback();
  }
}

std::vector<MemberState> Fleet::members() const {
  std::lock_guard lock(mutex_);
  std::vector<MemberState> states;
  for (const auto& [id, member] : members_)
    states.push_back({id, member.context.name, member.server, member.synced, member.ready});
  return states;
}

std::optional<std::string> Fleet::name_of(ClusterId id) const {
  if (id == kLocalCluster) return std::string();
  std::lock_guard lock(names_mutex_);
  auto position = names_.find(id);
  if (position == names_.end()) return std::nullopt;
  return position->second;
}

void Fleet::post(Work work) {
  {
    std::lock_guard lock(mutex_);
    work_.push_back(std::move(work));
  }
  wake_.notify_all();
}

void Fleet::run(std::stop_token stop) {
  TimePoint next_check = options_.clock->now();
  while (!stop.stop_requested()) {
    std::optional<Work> work;
    {
      std::unique_lock lock(mutex_);
      options_.clock->wait_until(wake_, lock, stop, next_check, [this] { return !work_.empty(); });
      if (stop.stop_requested()) return;
      if (!work_.empty()) {
        work = std::move(work_.front());
        work_.pop_front();
      }
    }
    if (work) apply(*work);
    if (options_.clock->now() >= next_check) {
      check_health();
      next_check = options_.clock->now() + options_.health_period;
    }
  }
}

void Fleet::apply(const Work& work) {
  if (work.synced) {
    member_synced(*work.synced);
    return;
  }
  std::vector<MembershipChange> changes;
  EventSubject subject;
  if (work.secret && work.profile) {
    subject = EventSubject::of(*work.secret);
    const kube::ObjectView profile = work.secret->view();
    // Read first: its digest covers only what engages the member (the access provider used), not the
    // profile's conditions and properties, which move on their own.
    auto source = read_cluster_profile(profile, options_.cluster_profiles->providers);
    const std::string digest = source ? source->digest : base::sha256_hex(source.error().message);
    changes = membership_.observe(std::string(profile.namespace_name()) + "/" + std::string(profile.name()),
                                  digest, [&source] { return source; });
  } else if (work.secret) {
    subject = EventSubject::of(*work.secret);
    changes = membership_.observe(work.secret->view());
  } else if (work.profile) {
    const auto slash = work.deleted.find('/');
    subject = {"multicluster.x-k8s.io/v1alpha1",
               "ClusterProfile",
               work.deleted.substr(0, slash),
               work.deleted.substr(slash + 1),
               {},
               {}};
    changes = membership_.remove(work.deleted);
  } else {
    subject = {"v1", "Secret", options_.namespace_name, work.deleted, {}, {}};
    changes = membership_.remove(work.deleted);
  }
  for (const MembershipChange& change : changes) {
    if (changes_)
      changes_
          ->Add({{"change", change.kind == MembershipChange::Kind::engage      ? "engage"
                            : change.kind == MembershipChange::Kind::disengage ? "disengage"
                                                                               : "refuse"}})
          .Increment();
    switch (change.kind) {
      case MembershipChange::Kind::engage:
        engage(change, subject);
        break;
      case MembershipChange::Kind::disengage:
        log(spdlog::level::info, "Disengaging member cluster",
            {{"cluster", change.name}, {"clusterID", std::to_string(change.id)}});
        disengage(change.id);
        break;
      case MembershipChange::Kind::refuse:
        refuse(change, subject);
        break;
    }
  }
  std::lock_guard lock(mutex_);
  refused_ = membership_.refused_count();
  if (refused_gauge_) refused_gauge_->Set(static_cast<double>(refused_));
}

void Fleet::engage(const MembershipChange& change, const EventSubject& secret) {
  const MemberSource& source = *change.source;
  auto transport = kube::make_https_transport(source.config, options_.transport);
  if (!transport) {
    refuse({MembershipChange::Kind::refuse, change.name, kLocalCluster, std::nullopt,
            "cannot set up the connection to " + source.config.server + ": " + transport.error().message},
           secret);
    return;
  }
  ClusterContext context;
  context.id = change.id;
  context.name = change.name;
  context.client =
      std::make_shared<kube::Client>(std::move(transport).value(), options_.field_manager, options_.client);
  InformerRegistryOptions informers;
  informers.informer = options_.informer;
  context.informers = std::make_shared<InformerRegistry>(context.client, informers);
  context.writer = std::make_shared<Writer>(context.client, context.informers, options_.field_manager);
  if (!options_.events.reporting_controller.empty())
    context.recorder = std::make_shared<EventRecorder>(context.client, options_.events);

  Member member;
  member.context = context;
  member.server = source.config.server;
  member.secret = secret;
  // After disengagement nothing is written to the member, whatever is still in flight.
  context.writer->set_fence([engaged = member.engaged, name = change.name, gate = options_.shard_gate,
                             unit = member_shard_unit(change.name)](const kube::ResourceType&,
                                                                    const ObjectKey&) -> kube::Result<void> {
    if (!engaged->load())
      return kube::make_error(kube::Reason::Cancelled,
                              "not written: member cluster " + name + " is no longer engaged");
    if (gate && !gate->may_write(unit))
      return kube::make_error(kube::Reason::Cancelled, "not written: the shard slot of member cluster " +
                                                           name +
                                                           " is not this replica's now (handed over, or "
                                                           "membership lost)");
    return {};
  });
  for (const EngageHook& hook : hooks_) member.engagements.push_back(hook(context));
  if (member_ready_) {
    member.ready_gauge = &member_ready_->Add({{"cluster", change.name}});
    member.ready_gauge->Set(0);
  }
  start_probe(member);
  {
    std::lock_guard lock(names_mutex_);
    names_.emplace(change.id, change.name);
  }
  {
    std::lock_guard lock(mutex_);
    members_.emplace(change.id, std::move(member));
    if (engaged_gauge_) engaged_gauge_->Set(static_cast<double>(members_.size()));
  }
  log(spdlog::level::info, "Engaging member cluster",
      {{"cluster", change.name}, {"clusterID", std::to_string(change.id)}, {"server", source.config.server}});
  context.informers->start();
  context.informers->on_synced([this, id = change.id] { post({nullptr, {}, id}); });
  event(secret, EventSeverity::normal, "MemberEngaged",
        "Engaged member cluster " + change.name + " at " + source.config.server);
}

void Fleet::start_probe(Member& member) const {
  member.probe = std::make_shared<Probe>();
  member.probe->thread =
      std::jthread([probe = member.probe.get(), client = member.context.client, clock = options_.clock,
                    period = options_.health_period, timeout = options_.probe_timeout](std::stop_token stop) {
        while (!stop.stop_requested()) {
          kube::Request request;
          request.path = "/readyz";
          request.timeout = timeout;
          auto answer = client->transport().send(request, stop);
          std::string failure;
          if (!answer) {
            failure = "GET /readyz: " + answer.error().message;
          } else if (answer->status_code != 200) {
            failure = "GET /readyz answered " + std::to_string(answer->status_code);
          }
          {
            std::lock_guard lock(probe->mutex);
            probe->failure = std::move(failure);
          }
          clock->sleep_for(stop, period);
        }
      });
}

void Fleet::member_synced(ClusterId id) {
  std::vector<Engagement> engagements;
  std::string name;
  {
    std::lock_guard lock(mutex_);
    auto position = members_.find(id);
    if (position == members_.end() || position->second.synced) return;  // disengaged meanwhile
    position->second.synced = true;
    engagements = position->second.engagements;
    name = position->second.context.name;
  }
  log(spdlog::level::info, "Member cluster caches synced",
      {{"cluster", name}, {"clusterID", std::to_string(id)}});
  for (const Engagement& engagement : engagements) {
    if (engagement.synced) engagement.synced();
  }
  check_health();
}

void Fleet::disengage(ClusterId id) {
  Member member;
  {
    std::lock_guard lock(mutex_);
    auto position = members_.find(id);
    if (position == members_.end()) return;
    member = std::move(position->second);
    members_.erase(position);
    if (engaged_gauge_) engaged_gauge_->Set(static_cast<double>(members_.size()));
  }
  {
    std::lock_guard lock(names_mutex_);
    names_.erase(id);
  }
  member.engaged->store(false);
  if (member.probe) member.probe->thread = {};  // stops and joins it
  for (const Engagement& engagement : member.engagements) {
    if (engagement.disengaged) engagement.disengaged();
  }
  member.context.informers->stop();
  if (member.context.recorder) member.context.recorder->flush();
  if (member_ready_ && member.ready_gauge) member_ready_->Remove(member.ready_gauge);
}

void Fleet::refuse(const MembershipChange& change, const EventSubject& secret) {
  log(spdlog::level::err, "Member cluster refused", {{"cluster", change.name}, {"error", change.problem}});
  event(secret, EventSeverity::warning, "KubeconfigRefused", change.problem);
}

void Fleet::check_health() {
  struct Change {
    EventSubject secret;
    std::string name;
    bool ready;
    std::string problems;
    std::vector<Engagement> engagements;
  };
  std::vector<Change> changes;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, member] : members_) {
      auto problems = member.context.informers->problems();
      if (member.probe) {
        std::lock_guard probe_lock(member.probe->mutex);
        if (!member.probe->failure.empty()) problems.push_back(member.probe->failure);
      }
      const bool ready = member.synced && problems.empty();
      if (member.ready_gauge) member.ready_gauge->Set(ready ? 1 : 0);
      // An unsynced member that has no problem yet is still listing: not announced.
      const bool unready = !ready && !problems.empty();
      if (ready != member.ready || (unready && !member.announced_unready)) {
        if (ready || unready)
          changes.push_back(
              {member.secret, member.context.name, ready, joined(problems), member.engagements});
        member.announced_unready = unready;
      }
      member.ready = ready;
    }
  }
  for (const Change& change : changes) {
    for (const Engagement& engagement : change.engagements) {
      if (engagement.health) engagement.health(change.ready);
    }
    if (change.ready) {
      log(spdlog::level::info, "Member cluster ready", {{"cluster", change.name}});
      event(change.secret, EventSeverity::normal, "MemberReady",
            "Member cluster " + change.name + " is ready");
    } else {
      log(spdlog::level::warn, "Member cluster unready",
          {{"cluster", change.name}, {"problems", change.problems}});
      event(change.secret, EventSeverity::warning, "MemberUnready",
            "Member cluster " + change.name + " cannot be watched: " + change.problems);
    }
  }
}

void Fleet::event(const EventSubject& secret, EventSeverity severity, std::string reason, std::string note) {
  if (options_.hub_events)
    options_.hub_events->record(secret, severity, std::move(reason), "Engage", std::move(note));
}

}  // namespace myop::runtime::fleet
