// Storage version migration of a CRD's objects, as the Kubernetes procedure for a new storage version
// asks (and as kube-storage-version-migrator and KEP-4192's StorageVersionMigration do it):
//
// - A CRD whose status.storedVersions names more than its storage version may still hold objects in
//   etcd in an older version. The API server reads them through conversion, so nothing breaks until
//   that older version is removed from the CRD: then they can no longer be read.
// - Each object gets one no-op write: a merge patch that changes nothing and carries the object's
//   resourceVersion as its precondition. The API server encodes the object in the storage version,
//   and writes it when those bytes differ from what etcd holds (an object in the old encoding); an
//   object already stored in the current version compares equal and is not written at all. A 409
//   means the object was written since it was listed (so it is stored in the current version
//   already); a 404, that it is gone. The writes are rate-limited.
// - Only when every object listed after the CRD named its storage version has been through this is
//   status.storedVersions set to [storage version], with the CRD's resourceVersion as precondition, so
//   a CRD changed in between (a rollback to another storage version) is never trimmed.
//
// The decisions without I/O are free functions, unit-tested; StorageVersionMigrator runs passes
// against the API server while this replica leads.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "runtime/runnable.h"

namespace myop::runtime {

// What a CustomResourceDefinition says about where its objects are stored.
struct CrdStorage {
  std::string name;                          // metadata.name, e.g. "myresources.myorg.io"
  std::string resource_version;              // metadata.resourceVersion
  kube::ResourceType type;                   // the objects, addressed in the storage version
  std::vector<std::string> stored_versions;  // status.storedVersions

  // The version with storage: true.
  const std::string& storage_version() const { return type.version; }
};

// Reads a CRD object; an error names what is missing (no storage version, no group or plural).
kube::Result<CrdStorage> read_crd_storage(const rapidjson::Value& crd);

// True when objects may be stored in a version other than the storage version.
bool needs_migration(const CrdStorage& crd);

// The merge patch of one object's no-op write: nothing changes, `resource_version` is the precondition.
std::string no_op_patch(std::string_view resource_version);

// The merge patch of the CRD's status subresource: storedVersions = [storage version], with the CRD's
// resourceVersion as the precondition.
std::string trim_stored_versions_patch(const CrdStorage& crd);

// What one pass did.
struct MigrationReport {
  std::size_t objects = 0;                // listed
  std::size_t rewritten = 0;              // no-op writes accepted (written when stored in an old encoding)
  std::size_t written_meanwhile = 0;      // 409: written by someone else since the list
  std::size_t gone = 0;                   // 404: deleted since the list
  std::vector<std::string> trimmed_from;  // storedVersions before the trim
  std::chrono::milliseconds took{0};
};

struct StorageVersionMigratorOptions {
  std::shared_ptr<kube::Client> client;
  std::string crd_name;
  // No-op writes per second (and burst): the migration is background work next to reconciles.
  double qps = 20;
  int burst = 20;
  std::int64_t page_size = 500;
  // How often the CRD is read again (a CRD upgraded without restarting the operator); after a pass
  // that failed, retry_interval.
  std::chrono::seconds check_interval{std::chrono::minutes(10)};
  std::chrono::seconds retry_interval{std::chrono::seconds(30)};
  std::string field_manager = "my-operator-storage-migration";
};

// Migrates the CRD's stored objects to its storage version and trims storedVersions. Needs leadership
// (it writes); synced at once (nothing waits for it).
class StorageVersionMigrator final : public Runnable {
 public:
  explicit StorageVersionMigrator(StorageVersionMigratorOptions options);
  ~StorageVersionMigrator() override;
  StorageVersionMigrator(const StorageVersionMigrator&) = delete;
  StorageVersionMigrator& operator=(const StorageVersionMigrator&) = delete;

  std::string name() const override { return "storage version migration"; }
  void start() override;
  void stop() override;
  bool has_synced() const override { return true; }
  bool needs_leader_election() const override { return true; }
  void on_synced(std::function<void()> callback) override { callback(); }

  // One pass. nullopt when the CRD needs no migration; an error when a step failed (the next pass
  // starts over: what was rewritten stays rewritten and is not written again).
  kube::Result<std::optional<MigrationReport>> migrate(const std::stop_token& stop = {});

 private:
  void run(const std::stop_token& stop);

  StorageVersionMigratorOptions options_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace myop::runtime
