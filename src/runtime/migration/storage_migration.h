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
// - An object the API server refuses to update as it is (an admission policy or webhook denies it,
//   validation fails: 403, 422, 400) is skipped and reported: a Warning Event on the object
//   (StorageMigrationRefused, with the API server's message), a log line naming it, the metrics below.
//   The pass goes on; storedVersions is not trimmed while any object is refused; every retry_interval
//   a new pass writes the refused objects again (only them while the CRD is unchanged), until a change
//   of the object (or of the policy) lets them through.
// - Any other failure (5xx, a timeout, 429 after the client's retries, no connection) interrupts the
//   pass; retry_interval later it resumes with the object it stopped at: each object is written at
//   most once per pass.
// - When every object of the pass has been through this and none is refused, status.storedVersions is
//   set to [storage version], with the CRD's resourceVersion read BEFORE the pass as the precondition:
//   a CRD changed during the pass (a flip of the storage version and back, a rollback, a caBundle
//   rotation) fails the trim with a conflict, and a new pass starts at once. That pass writes only the
//   objects written since their last confirmed write (runtime/migration/storage_migration_plan.h gives the
//   reasoning), so a CRD that changes now and then delays the trim by one short pass, never forever.
//
// Which replica migrates: the manager starts the migrator while this replica leads (it needs leader
// election), and `write_permit` is asked before every write. Under leader election it holds while the
// Lease is fresh (leader_permit). With sharding, where the manager runs it on every replica, only the
// replica whose shard slot 0 is active may write (shard_slot_permit), each write under a ticket of the
// slot: a handover of the slot waits for the write in flight, and the replica stops before its next
// one. A replica not permitted reads nothing either; it looks again every retry_interval.
//
// Metrics (<metrics_prefix>_...): objects_total{result=rewritten|written_meanwhile|gone|refused}, the
// answers to no-op writes; objects_remaining{state=pending|refused}, the objects the current pass has
// still to write and the objects refused and not written since.
//
// The decisions without I/O are in runtime/migration/storage_migration_plan.h, unit-tested;
// StorageVersionMigrator does the I/O.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/token_bucket.h"
#include "kube/client.h"
#include "runtime/controller/event_recorder.h"
#include "runtime/election/leader_election.h"
#include "runtime/manager/periodic_runner.h"
#include "runtime/manager/runnable.h"
#include "runtime/migration/storage_migration_plan.h"
#include "runtime/sharding/shard_gate.h"

namespace myop::runtime {

// Asked before every write of the migration: a hold to keep while that write is in flight (any
// non-null pointer), or null when this replica must not write for the migration now.
using MigrationWritePermit = std::function<std::shared_ptr<void>()>;

// Under sharding: only the replica whose gate has `slot` active may write, each write under a ticket
// of the slot (ShardGate::deactivate, the handover, waits for it).
MigrationWritePermit shard_slot_permit(std::shared_ptr<ShardGate> gate, int slot = 0);
// Under leader election: while the leader's Lease is fresh (LeaseLeaderElector::may_write), so a
// replica that lost it stops before its next write, even before the manager has stopped the migrator.
MigrationWritePermit leader_permit(std::shared_ptr<const LeaseLeaderElector> elector);

struct StorageVersionMigratorOptions {
  std::shared_ptr<kube::Client> client;
  std::string crd_name;
  // No-op writes per second (and burst): the migration is background work next to reconciles.
  double qps = 20;
  int burst = 20;
  std::int64_t page_size = 500;
  // The CRD is read again after this many writes: a CRD changed meanwhile is noticed then (a new pass
  // starts at once), and the writes before are confirmed (not written again after a later change).
  std::size_t confirm_every = 100;
  // How often the CRD is read while there is nothing to do (a CRD upgraded without restarting the
  // operator); after a pass that was interrupted or left objects refused, or while another replica
  // migrates, retry_interval.
  std::chrono::seconds check_interval{std::chrono::minutes(10)};
  std::chrono::seconds retry_interval{std::chrono::seconds(30)};
  // The field manager of the no-op writes, e.g. "<program>-storage-migration"; required (the program
  // names itself, runtime/ knows no product).
  std::string field_manager;
  // Unset: this replica always may write (the manager runs the migrator only while it leads).
  MigrationWritePermit write_permit;
  // Warning Events on refused objects; none when null.
  std::shared_ptr<EventRecorder> events;
  // Metrics: <metrics_prefix>_objects_total and _objects_remaining; none when null.
  std::shared_ptr<prometheus::Registry> registry;
  std::string metrics_prefix = "storage_migration";
  // The rate limit and the waits between passes run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// How one call of migrate() ended.
enum class MigrationResult {
  not_needed,        // storedVersions names the storage version only
  trimmed,           // every object in the storage version; storedVersions trimmed to it
  refused,           // the pass is over, some objects were refused: the trim waits for them
  crd_changed,       // the CRD changed during the pass (a check or the trim's precondition): a new pass
  interrupted,       // a failure stopped the pass; it resumes where it stopped
  not_the_migrator,  // another replica migrates now (write_permit refused)
};

std::string_view result_name(MigrationResult result);

// What one call of migrate() did.
struct MigrationReport {
  MigrationResult result = MigrationResult::not_needed;
  std::optional<kube::Error> error;       // interrupted: why
  std::size_t listed = 0;                 // objects listed by this call (0 when it resumed a pass)
  std::size_t skipped = 0;                // listed, but confirmed in the storage version already
  std::size_t rewritten = 0;              // no-op writes accepted
  std::size_t written_meanwhile = 0;      // 409: written by someone else since the list
  std::size_t gone = 0;                   // 404: deleted since the list
  std::size_t refused = 0;                // refused by the API server in this call
  std::vector<std::string> trimmed_from;  // storedVersions before the trim
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

  // Works until the pass ends (or stops, see MigrationResult). Called by the migrator's runner once
  // started; one caller at a time.
  MigrationReport migrate(const std::stop_token& stop = {});

 private:
  // migrate(), and when the next call comes: check_interval, retry_interval or at once.
  StepResult step(const std::stop_token& stop);
  MigrationReport migrate_once(const std::stop_token& stop);
  kube::Result<CrdStorage> read_crd(const std::stop_token& stop);
  // Lists the objects of a new pass into progress_.
  kube::Result<void> list(const CrdStorage& crd, MigrationReport& report, const std::stop_token& stop);
  // The no-op write of `target`, under the write permit; nullopt when the permit is refused. An
  // interrupted write sets the report's result and error.
  std::optional<WriteResult> write(const CrdStorage& crd, const MigrationTarget& target,
                                   MigrationReport& report, const std::stop_token& stop);
  void report_refusal(const CrdStorage& crd, const MigrationTarget& target, const std::string& message,
                      bool first);
  MigrationReport trim(MigrationReport report, const std::stop_token& stop);
  void count(WriteOutcome outcome);
  void update_gauges();

  StorageVersionMigratorOptions options_;
  base::TokenBucket bucket_;
  MigrationProgress progress_;
  MigrationResult last_result_ = MigrationResult::not_needed;
  std::size_t last_refused_count_ = 0;  // at the last warning about refused objects
  prometheus::Family<prometheus::Counter>* objects_ = nullptr;
  prometheus::Gauge* pending_ = nullptr;
  prometheus::Gauge* refused_ = nullptr;
  PeriodicRunner runner_;  // last: stops before what a pass uses goes
};

}  // namespace myop::runtime
