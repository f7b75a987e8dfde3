// The decisions of the storage version migration (runtime/migration/storage_migration.h), without I/O: what a
// CRD says about where its objects are stored, what an answer to a no-op write means, which objects a
// pass still has to write, and when status.storedVersions may be trimmed, under which precondition.
//
// Two facts of the API server carry the design:
// - An object's bytes in etcd change only when it is written, and every write gives it a new
//   resourceVersion. An object known to be stored in the storage version at resourceVersion R stays
//   so as long as its resourceVersion is R, whatever happens to the CRD meanwhile.
// - While the CRD keeps one resourceVersion, every write is stored in its storage version. So a CRD
//   read twice with the same resourceVersion vouches for every write in between: ours (a no-op write
//   that rewrote an object), anyone else's (the write behind a 409), and every object created since.
//
// MigrationProgress, driven by the migrator:
//
//   begin(crd) -----> nothing_to_do   storedVersions names the storage version only; all forgotten
//     |   \---------> list             first pass, another storage version (all forgotten) or another
//     |                                CRD resourceVersion (its writes not yet confirmed are forgotten):
//     |                                a new pass over the objects listed now, see plan()
//     \-------------> resume           the CRD's resourceVersion is the pass's: the writes so far are
//                                      confirmed; the pass goes on where it stopped, or, when its walk
//                                      is over, a new pass starts over the refused objects only
//   plan(listed)      the pass's objects in list order, minus those confirmed at the resourceVersion
//                     they still have (after a CRD change, only what was written since is written again)
//   next()/record()   walk them: each object at most once per pass; an interrupted write stays next
//   confirm(crd)      a check in the middle of a pass: true (and the writes so far confirmed) while the
//                     CRD has the pass's resourceVersion
//   may_trim()        the walk is over and no object is refused; trim_precondition() is the
//                     resourceVersion of the CRD read before the pass, so a CRD changed since (a flip of
//                     the storage version and back included) fails the trim with a conflict
//
// A pass after a CRD change writes only the objects written since their last confirmed write (and the
// ones never written), so it is short, and a CRD that changes now and then (the operator's own caBundle
// rotation) cannot keep the trim from happening: each change costs one list and those few writes.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/errors.h"
#include "kube/resource.h"

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

// The merge patch of the CRD's status subresource: storedVersions = [the storage version], with
// `precondition` as the CRD's resourceVersion (the one read before the pass).
std::string trim_stored_versions_patch(const std::string& storage_version, std::string_view precondition);

// What the API server's answer to a no-op write means.
enum class WriteOutcome {
  rewritten,          // accepted: stored in the storage version now (written, or already so)
  written_meanwhile,  // 409: written by someone else since it was listed, so stored in the new version
  gone,               // 404: deleted since it was listed
  refused,            // the API server does not accept an update of the object as it is: an admission
                      // policy or webhook denied it (403), or validation (422, 400). Skipped, reported,
                      // tried again in a later pass; the trim waits for it.
  interrupted,        // nothing learnt about the object (5xx, timeout, 429 after the client's retries,
                      // no connection, RBAC refusing the operator itself, cancelled): the pass stops
                      // here and resumes later with this object
};

std::string_view outcome_name(WriteOutcome outcome);

// The outcome of a write that failed with `error`. A 403 of RBAC (the operator may not patch the
// resource at all) interrupts: it would refuse every object alike, and only a change of the
// operator's permissions fixes it.
WriteOutcome classify_write_error(const kube::Error& error);

// The API server's words about a refused write, for the Event and the log: without the advice the
// kube layer appends to every 403 (to grant RBAC), which does not fit an admission denial.
std::string refusal_message(const kube::Error& error);

// One object a pass writes, as listed.
struct MigrationTarget {
  std::string namespace_name;  // empty for a cluster-scoped resource
  std::string name;
  std::string uid;
  std::string resource_version;

  std::string key() const { return namespace_name.empty() ? name : namespace_name + "/" + name; }
};

// The answer to one write, for MigrationProgress::record.
struct WriteResult {
  WriteOutcome outcome = WriteOutcome::interrupted;
  std::string resource_version;  // rewritten: the object's resourceVersion in the answer
  std::string message;           // refused: the API server's reason
};

// A refused object: as listed, and why.
struct Refusal {
  MigrationTarget target;
  std::string message;
};

// The progress of the migration to one storage version (the diagram at the top of this file). Not
// thread-safe: the migrator's thread alone uses it.
class MigrationProgress {
 public:
  enum class Step { nothing_to_do, list, resume };

  Step begin(const CrdStorage& crd);
  // The objects of the new pass that begin() asked for (Step::list), in list order. Forgets what it
  // knew of objects no longer listed.
  void plan(const std::vector<MigrationTarget>& listed);
  // True (and the writes so far confirmed) while `crd` has the pass's resourceVersion and storage
  // version; false when the CRD changed: call begin() for a new pass.
  bool confirm(const CrdStorage& crd);

  // The next object to write in this pass; nullptr when the walk is over.
  const MigrationTarget* next() const;
  // The answer about next(), which it moves past (an interrupted write stays next).
  void record(const WriteResult& result);

  bool walk_over() const { return next() == nullptr; }
  bool may_trim() const { return planned_ && walk_over() && refused_.empty(); }
  // The resourceVersion of the CRD read before this pass, the trim's precondition.
  const std::string& trim_precondition() const { return crd_resource_version_; }
  const std::string& storage_version() const { return storage_version_; }

  // Objects of this pass not written yet.
  std::size_t pending() const;
  // Objects refused and not written since (in this pass or an earlier one of the same storage version).
  const std::map<std::string, Refusal>& refused() const { return refused_; }
  bool is_refused(const std::string& key) const { return refused_.contains(key); }
  // Objects of this pass left out by plan(): confirmed in the storage version at their resourceVersion.
  std::size_t skipped() const { return skipped_; }

 private:
  void forget_all();

  std::string storage_version_;
  // Objects confirmed stored in storage_version_: key -> the resourceVersion they had then.
  std::map<std::string, std::string> confirmed_;
  // Rewritten in this pass, not yet confirmed (the CRD not read again since): key -> resourceVersion.
  std::vector<std::pair<std::string, std::string>> unconfirmed_;
  std::map<std::string, Refusal> refused_;

  // The pass: begun under this CRD resourceVersion; its objects and how far the walk got.
  std::string crd_resource_version_;
  bool planned_ = false;
  std::vector<MigrationTarget> todo_;
  std::size_t position_ = 0;
  std::size_t skipped_ = 0;
};

}  // namespace myop::runtime
