#include "runtime/storage_migration.h"

#include <algorithm>
#include <utility>

#include "base/clock.h"
#include "base/token_bucket.h"
#include "kube/object.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

kube::Error invalid_crd(const std::string& name, const std::string& what) {
  return kube::make_error(kube::Reason::Invalid, "the CRD " + name + " " + what);
}

std::string joined(const std::vector<std::string>& values) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : ",") + value;
  return text;
}

}  // namespace

kube::Result<CrdStorage> read_crd_storage(const rapidjson::Value& crd) {
  const kube::ObjectView view(crd);
  CrdStorage storage;
  storage.name = std::string(view.name());
  storage.resource_version = std::string(view.resource_version());
  storage.type.group = kube::string_at(crd, {"spec", "group"});
  storage.type.resource = kube::string_at(crd, {"spec", "names", "plural"});
  storage.type.kind = kube::string_at(crd, {"spec", "names", "kind"});
  storage.type.namespaced = kube::string_at(crd, {"spec", "scope"}) != "Cluster";
  if (storage.type.group.empty() || storage.type.resource.empty())
    return invalid_crd(storage.name, "has no spec.group or spec.names.plural");
  if (const auto* versions = view.find({"spec", "versions"}); versions != nullptr && versions->IsArray()) {
    for (const auto& version : versions->GetArray()) {
      const kube::ObjectView entry(version);
      const auto* stored = entry.find({"storage"});
      if (stored != nullptr && stored->IsBool() && stored->GetBool())
        storage.type.version = kube::string_at(version, {"name"});
    }
  }
  if (storage.type.version.empty()) return invalid_crd(storage.name, "has no version with storage: true");
  if (const auto* stored = view.find({"status", "storedVersions"}); stored != nullptr && stored->IsArray())
    for (const auto& version : stored->GetArray())
      if (version.IsString())
        storage.stored_versions.emplace_back(version.GetString(), version.GetStringLength());
  return storage;
}

bool needs_migration(const CrdStorage& crd) {
  return std::any_of(crd.stored_versions.begin(), crd.stored_versions.end(),
                     [&crd](const std::string& version) { return version != crd.storage_version(); });
}

std::string no_op_patch(std::string_view resource_version) {
  return R"({"metadata":{"resourceVersion":)" + json_quote(resource_version) + "}}";
}

std::string trim_stored_versions_patch(const CrdStorage& crd) {
  return R"({"metadata":{"resourceVersion":)" + json_quote(crd.resource_version) +
         R"(},"status":{"storedVersions":[)" + json_quote(crd.storage_version()) + "]}}";
}

StorageVersionMigrator::StorageVersionMigrator(StorageVersionMigratorOptions options)
    : options_(std::move(options)) {}

StorageVersionMigrator::~StorageVersionMigrator() { stop(); }

void StorageVersionMigrator::start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { run(stop); });
}

void StorageVersionMigrator::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
}

void StorageVersionMigrator::run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    auto pass = migrate(stop);
    if (!pass && !stop.stop_requested())
      log(spdlog::level::err, "Storage version migration failed; it starts over later",
          {{"crd", options_.crd_name}, {"error", pass.error().to_string()}});
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, pass ? options_.check_interval : options_.retry_interval,
                   [] { return false; });
  }
}

kube::Result<std::optional<MigrationReport>> StorageVersionMigrator::migrate(const std::stop_token& stop) {
  const auto started = std::chrono::steady_clock::now();
  const auto crds = kube::resources::custom_resource_definitions();
  auto read = options_.client->get(crds, "", options_.crd_name, {}, stop);
  if (!read) return std::move(read).error();
  auto before = read_crd_storage(*read);
  if (!before) return std::move(before).error();
  if (!needs_migration(*before)) return std::optional<MigrationReport>();
  log(spdlog::level::info, "Migrating stored objects to the storage version",
      {{"crd", options_.crd_name},
       {"storageVersion", before->storage_version()},
       {"storedVersions", joined(before->stored_versions)}});

  // Listed after the CRD named its storage version: every object written from now on is stored in it.
  kube::ListOptions list;
  list.limit = options_.page_size;
  auto objects = options_.client->list_all(before->type, "", list, stop);
  if (!objects) return std::move(objects).error();
  MigrationReport report;
  base::TokenBucket bucket(options_.qps, options_.burst);
  const auto& clock = base::system_clock();
  const auto* items = kube::ObjectView(*objects).find({"items"});
  if (items == nullptr || !items->IsArray())
    return kube::make_error(kube::Reason::Invalid,
                            "the list of " + before->type.qualified_resource() + " has no items");
  for (const auto& item : items->GetArray()) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, bucket.reserve(clock->now()), [] { return false; });
    }
    if (stop.stop_requested()) return kube::make_error(kube::Reason::Cancelled, "the migration was stopped");
    ++report.objects;
    const kube::ObjectView object(item);
    kube::PatchOptions patch;
    patch.field_manager = options_.field_manager;
    auto written =
        options_.client->patch(before->type, object.namespace_name(), object.name(), kube::PatchType::Merge,
                               no_op_patch(object.resource_version()), patch, {}, stop);
    if (written) {
      ++report.rewritten;
    } else if (kube::is_conflict(written.error())) {
      ++report.written_meanwhile;
    } else if (kube::is_not_found(written.error())) {
      ++report.gone;
    } else {
      auto error = std::move(written).error();
      error.message = "the no-op write of " + std::string(object.namespace_name()) + "/" +
                      std::string(object.name()) + ": " + error.message;
      return error;
    }
  }

  // Trimmed only if the CRD still names the same storage version, with the resourceVersion just read
  // as the precondition: a CRD changed in between fails with a conflict and the next pass starts over.
  auto reread = options_.client->get(crds, "", options_.crd_name, {}, stop);
  if (!reread) return std::move(reread).error();
  auto after = read_crd_storage(*reread);
  if (!after) return std::move(after).error();
  if (after->storage_version() != before->storage_version())
    return kube::make_error(kube::Reason::Conflict, "the CRD's storage version changed from " +
                                                        before->storage_version() + " to " +
                                                        after->storage_version() + " during the migration");
  if (needs_migration(*after)) {
    kube::PatchOptions patch;
    patch.field_manager = options_.field_manager;
    auto trimmed = options_.client->patch(crds, "", options_.crd_name, kube::PatchType::Merge,
                                          trim_stored_versions_patch(*after), patch, "status", stop);
    if (!trimmed) return std::move(trimmed).error();
    report.trimmed_from = after->stored_versions;
  }
  report.took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  log(spdlog::level::info, "Migrated stored objects to the storage version",
      {{"crd", options_.crd_name},
       {"storedVersions", after->storage_version()},
       {"trimmedFrom", joined(report.trimmed_from)},
       {"objects", std::to_string(report.objects)},
       {"rewritten", std::to_string(report.rewritten)},
       {"writtenMeanwhile", std::to_string(report.written_meanwhile)},
       {"gone", std::to_string(report.gone)},
       {"seconds", std::to_string(static_cast<double>(report.took.count()) / 1000.0)}});
  return std::optional<MigrationReport>(std::move(report));
}

}  // namespace myop::runtime
