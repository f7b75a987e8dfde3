#include "runtime/migration/storage_migration.h"

#include <stdexcept>
#include <utility>

#include "kube/object.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

constexpr const char* kRefusedReason = "StorageMigrationRefused";
constexpr const char* kAction = "MigrateStorage";

std::string joined(const std::vector<std::string>& values) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : ",") + value;
  return text;
}

MigrationReport ended(MigrationReport report, MigrationResult result) {
  report.result = result;
  return report;
}

MigrationReport interrupted(MigrationReport report, kube::Error error) {
  report.result = MigrationResult::interrupted;
  report.error = std::move(error);
  return report;
}

}  // namespace

MigrationWritePermit shard_slot_permit(std::shared_ptr<ShardGate> gate, int slot) {
  return [gate = std::move(gate), slot]() -> std::shared_ptr<void> {
    auto ticket = gate->enter_slot(slot);
    if (!ticket) return nullptr;
    return std::make_shared<ShardGate::Ticket>(std::move(*ticket));
  };
}

MigrationWritePermit leader_permit(std::shared_ptr<const LeaseLeaderElector> elector) {
  return [elector = std::move(elector)]() -> std::shared_ptr<void> {
    return elector->may_write() ? std::make_shared<bool>(true) : nullptr;
  };
}

std::string_view result_name(MigrationResult result) {
  switch (result) {
    case MigrationResult::not_needed:
      return "not_needed";
    case MigrationResult::trimmed:
      return "trimmed";
    case MigrationResult::refused:
      return "refused";
    case MigrationResult::crd_changed:
      return "crd_changed";
    case MigrationResult::interrupted:
      return "interrupted";
    case MigrationResult::not_the_migrator:
      return "not_the_migrator";
  }
  return "interrupted";
}

StorageVersionMigrator::StorageVersionMigrator(StorageVersionMigratorOptions options)
    : options_(std::move(options)),
      bucket_(options_.qps, options_.burst, options_.clock ? options_.clock : base::system_clock()),
      runner_({.name = "storage version migration",
               .period = options_.check_interval,
               .retry = base::constant_backoff(options_.retry_interval),
               .needs_leader_election = true,
               .clock = options_.clock},
              [this](const std::stop_token& stop) { return step(stop); }) {
  if (options_.field_manager.empty())
    throw std::invalid_argument("StorageVersionMigratorOptions::field_manager is required");
  if (!options_.clock) options_.clock = base::system_clock();
  if (options_.confirm_every == 0) options_.confirm_every = 1;
  if (options_.registry) {
    const std::string& prefix = options_.metrics_prefix;
    objects_ = &prometheus::BuildCounter()
                    .Name(prefix + "_objects_total")
                    .Help("Answers to the storage migration's no-op writes, by result")
                    .Register(*options_.registry);
    for (const auto outcome : {WriteOutcome::rewritten, WriteOutcome::written_meanwhile, WriteOutcome::gone,
                               WriteOutcome::refused})
      objects_->Add({{"result", std::string(outcome_name(outcome))}});
    auto& remaining = prometheus::BuildGauge()
                          .Name(prefix + "_objects_remaining")
                          .Help(
                              "Objects the storage migration has still to write (pending: in the current "
                              "pass; refused: refused by the API server and not written since)")
                          .Register(*options_.registry);
    pending_ = &remaining.Add({{"state", "pending"}});
    refused_ = &remaining.Add({{"state", "refused"}});
  }
}

StorageVersionMigrator::~StorageVersionMigrator() { stop(); }

void StorageVersionMigrator::start() { runner_.start(); }

void StorageVersionMigrator::stop() { runner_.stop(); }

StepResult StorageVersionMigrator::step(const std::stop_token& stop) {
  const auto report = migrate(stop);
  switch (report.result) {
    case MigrationResult::not_needed:
    case MigrationResult::trimmed:
      return StepResult::ok();  // check_interval
    case MigrationResult::crd_changed:
      return StepResult::after(
          Duration::zero());  // a pass ends so only when the CRD changed: no loop without changes
    case MigrationResult::interrupted:
      if (stop.stop_requested()) return StepResult::done();
      log(spdlog::level::warn, "Storage version migration interrupted; it resumes where it stopped",
          {{"crd", options_.crd_name},
           {"error", report.error ? report.error->to_string() : std::string()},
           {"retryInSeconds", std::to_string(options_.retry_interval.count())}});
      return StepResult::retry();  // retry_interval
    case MigrationResult::refused:
      return StepResult::retry();
    case MigrationResult::not_the_migrator:
      return StepResult::after(options_.retry_interval);
  }
  return StepResult::retry();
}

kube::Result<CrdStorage> StorageVersionMigrator::read_crd(const std::stop_token& stop) {
  auto read =
      options_.client->get(kube::resources::custom_resource_definitions(), "", options_.crd_name, {}, stop);
  if (!read) return std::move(read).error();
  return read_crd_storage(*read);
}

kube::Result<void> StorageVersionMigrator::list(const CrdStorage& crd, MigrationReport& report,
                                                const std::stop_token& stop) {
  kube::ListOptions list;
  list.limit = options_.page_size;
  auto objects = options_.client->list_all(crd.type, "", list, stop);
  if (!objects) return std::move(objects).error();
  const auto* items = kube::ObjectView(*objects).find({"items"});
  if (items == nullptr || !items->IsArray())
    return kube::make_error(kube::Reason::Invalid,
                            "the list of " + crd.type.qualified_resource() + " has no items");
  std::vector<MigrationTarget> listed;
  listed.reserve(items->Size());
  for (const auto& item : items->GetArray()) {
    const kube::ObjectView object(item);
    listed.push_back({std::string(object.namespace_name()), std::string(object.name()),
                      std::string(object.uid()), std::string(object.resource_version())});
  }
  progress_.plan(listed);
  report.listed = listed.size();
  report.skipped = progress_.skipped();
  return {};
}

MigrationReport StorageVersionMigrator::migrate(const std::stop_token& stop) {
  MigrationReport report = migrate_once(stop);
  last_result_ = report.result;
  if (progress_.refused().empty()) last_refused_count_ = 0;
  return report;
}

MigrationReport StorageVersionMigrator::migrate_once(const std::stop_token& stop) {
  MigrationReport report;
  if (options_.write_permit && !options_.write_permit())
    return ended(report, MigrationResult::not_the_migrator);
  auto crd = read_crd(stop);
  if (!crd) return interrupted(report, std::move(crd).error());
  const auto step = progress_.begin(*crd);
  if (step == MigrationProgress::Step::nothing_to_do) {
    update_gauges();
    return ended(report, MigrationResult::not_needed);
  }
  if (step == MigrationProgress::Step::list) {
    if (auto listed = list(*crd, report, stop); !listed)
      return interrupted(report, std::move(listed).error());
    log(spdlog::level::info, "Migrating stored objects to the storage version",
        {{"crd", options_.crd_name},
         {"storageVersion", crd->storage_version()},
         {"storedVersions", joined(crd->stored_versions)},
         {"crdResourceVersion", crd->resource_version},
         {"listed", std::to_string(report.listed)},
         {"alreadyMigrated", std::to_string(report.skipped)}});
  } else if (progress_.pending() > 0) {
    // After an interruption, said once; the refused objects' turn every retry_interval, at debug level.
    const bool resumed = last_result_ != MigrationResult::refused;
    log(resumed ? spdlog::level::info : spdlog::level::debug,
        resumed ? "Resuming the storage version migration" : "Writing the refused objects again",
        {{"crd", options_.crd_name},
         {"storageVersion", crd->storage_version()},
         {"pending", std::to_string(progress_.pending())},
         {"refused", std::to_string(progress_.refused().size())}});
  }
  update_gauges();

  std::size_t since_confirmed = 0;
  while (const MigrationTarget* next = progress_.next()) {
    if (since_confirmed >= options_.confirm_every) {
      since_confirmed = 0;
      auto again = read_crd(stop);
      if (!again) return interrupted(report, std::move(again).error());
      if (!progress_.confirm(*again)) return ended(report, MigrationResult::crd_changed);
    }
    const MigrationTarget target = *next;
    auto result = write(*crd, target, report, stop);
    if (!result) return ended(report, MigrationResult::not_the_migrator);
    if (result->outcome == WriteOutcome::interrupted) return report;  // write() set result and error
    progress_.record(*result);
    ++since_confirmed;
    update_gauges();
  }

  if (!progress_.refused().empty()) {
    // A warning when the number of refused objects changed; the passes in between repeat it at debug level.
    const bool news = progress_.refused().size() != last_refused_count_;
    last_refused_count_ = progress_.refused().size();
    log(news ? spdlog::level::warn : spdlog::level::debug,
        "Storage version migration: objects refused by the API server keep storedVersions from being trimmed",
        {{"crd", options_.crd_name},
         {"storageVersion", crd->storage_version()},
         {"storedVersions", joined(crd->stored_versions)},
         {"refused", std::to_string(progress_.refused().size())},
         {"retryInSeconds", std::to_string(options_.retry_interval.count())}});
    return ended(report, MigrationResult::refused);
  }
  return trim(std::move(report), stop);
}

std::optional<WriteResult> StorageVersionMigrator::write(const CrdStorage& crd, const MigrationTarget& target,
                                                         MigrationReport& report,
                                                         const std::stop_token& stop) {
  const auto cancelled = [&] {
    report.result = MigrationResult::interrupted;
    report.error = kube::make_error(kube::Reason::Cancelled, "the migration was stopped");
    return WriteResult{};
  };
  if (!options_.clock->sleep_for(stop, bucket_.reserve(options_.clock->now()))) return cancelled();
  std::shared_ptr<void> permit;
  if (options_.write_permit && !(permit = options_.write_permit())) return std::nullopt;
  kube::PatchOptions patch;
  patch.field_manager = options_.field_manager;
  auto written = options_.client->patch(crd.type, target.namespace_name, target.name, kube::PatchType::Merge,
                                        no_op_patch(target.resource_version), patch, {}, stop);
  permit.reset();
  if (written) {
    count(WriteOutcome::rewritten);
    ++report.rewritten;
    return WriteResult{
        WriteOutcome::rewritten, std::string(kube::ObjectView(*written).resource_version()), {}};
  }
  auto error = std::move(written).error();
  const WriteOutcome outcome = classify_write_error(error);
  count(outcome);
  switch (outcome) {
    case WriteOutcome::written_meanwhile:
      ++report.written_meanwhile;
      break;
    case WriteOutcome::gone:
      ++report.gone;
      break;
    case WriteOutcome::refused: {
      ++report.refused;
      const auto known = progress_.refused().find(target.key());
      const bool first =
          known == progress_.refused().end() || known->second.message != refusal_message(error);
      report_refusal(crd, target, refusal_message(error), first);
      break;
    }
    case WriteOutcome::rewritten:
      break;
    case WriteOutcome::interrupted:
      if (stop.stop_requested()) return cancelled();
      error.message = "the no-op write of " + target.key() + ": " + error.message;
      report.result = MigrationResult::interrupted;
      report.error = std::move(error);
      return WriteResult{};
  }
  return WriteResult{outcome, {}, outcome == WriteOutcome::refused ? refusal_message(error) : std::string()};
}

void StorageVersionMigrator::report_refusal(const CrdStorage& crd, const MigrationTarget& target,
                                            const std::string& message, bool first) {
  // Every time at debug level, the first time (or with a new reason) as a warning: a refused object is
  // tried again every retry_interval, and one line per object says enough.
  log(first ? spdlog::level::warn : spdlog::level::debug,
      "The API server refused the storage migration's no-op write of an object; storedVersions keeps the old "
      "versions until it is written",
      {{"crd", crd.name},
       {"namespace", target.namespace_name},
       {"name", target.name},
       {"storageVersion", crd.storage_version()},
       {"error", message}});
  if (!options_.events) return;
  EventSubject subject{crd.type.api_version(), crd.type.kind, target.namespace_name, target.name, target.uid,
                       target.resource_version};
  options_.events->record(
      subject, EventSeverity::warning, kRefusedReason, kAction,
      "The API server refused the no-op write that stores this object in " + crd.type.api_version() + ": " +
          message + ". Until an update of this object is accepted, status.storedVersions of the CRD " +
          crd.name + " keeps [" + joined(crd.stored_versions) +
          "]. Change the object so that it passes admission and validation (any accepted write "
          "migrates it), or delete it.");
}

MigrationReport StorageVersionMigrator::trim(MigrationReport report, const std::stop_token& stop) {
  // Read once more: a CRD changed since the pass began would fail the trim; a new pass starts at once
  // instead, and the writes so far are confirmed when it has not.
  auto again = read_crd(stop);
  if (!again) return interrupted(std::move(report), std::move(again).error());
  if (!progress_.confirm(*again)) return ended(std::move(report), MigrationResult::crd_changed);
  kube::PatchOptions patch;
  patch.field_manager = options_.field_manager;
  std::shared_ptr<void> permit;
  if (options_.write_permit && !(permit = options_.write_permit()))
    return ended(std::move(report), MigrationResult::not_the_migrator);
  auto trimmed = options_.client->patch(
      kube::resources::custom_resource_definitions(), "", options_.crd_name, kube::PatchType::Merge,
      trim_stored_versions_patch(progress_.storage_version(), progress_.trim_precondition()), patch, "status",
      stop);
  permit.reset();
  if (!trimmed) {
    if (kube::is_conflict(trimmed.error())) {
      log(spdlog::level::info,
          "The CRD changed during the storage version migration; a new pass checks what was written since",
          {{"crd", options_.crd_name}, {"passCrdResourceVersion", progress_.trim_precondition()}});
      return ended(std::move(report), MigrationResult::crd_changed);
    }
    return interrupted(std::move(report), std::move(trimmed).error());
  }
  report.trimmed_from = again->stored_versions;
  log(spdlog::level::info, "Migrated stored objects to the storage version; storedVersions trimmed",
      {{"crd", options_.crd_name},
       {"storedVersions", progress_.storage_version()},
       {"trimmedFrom", joined(report.trimmed_from)},
       {"rewritten", std::to_string(report.rewritten)},
       {"writtenMeanwhile", std::to_string(report.written_meanwhile)},
       {"gone", std::to_string(report.gone)}});
  progress_ = MigrationProgress();
  update_gauges();
  return ended(std::move(report), MigrationResult::trimmed);
}

void StorageVersionMigrator::count(WriteOutcome outcome) {
  if (objects_ != nullptr && outcome != WriteOutcome::interrupted)
    objects_->Add({{"result", std::string(outcome_name(outcome))}}).Increment();
}

void StorageVersionMigrator::update_gauges() {
  if (pending_ != nullptr) pending_->Set(static_cast<double>(progress_.pending()));
  if (refused_ != nullptr) refused_->Set(static_cast<double>(progress_.refused().size()));
}

}  // namespace myop::runtime
