#include "runtime/migration/storage_migration_plan.h"

#include <algorithm>

#include "kube/object.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

kube::Error invalid_crd(const std::string& name, const std::string& what) {
  return kube::make_error(kube::Reason::Invalid, "the CRD " + name + " " + what);
}

// RBAC's refusal: `<resource> "<name>" is forbidden: User "<user>" cannot patch resource ...`
// (k8s.io/apiserver's responsewriters.forbiddenMessage). An admission denial names its policy or
// webhook instead.
bool is_rbac_refusal(const kube::Error& error) {
  const auto user = error.message.find("forbidden: User \"");
  return user != std::string::npos && error.message.find("\" cannot ", user) != std::string::npos;
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

std::string trim_stored_versions_patch(const std::string& storage_version, std::string_view precondition) {
  return R"({"metadata":{"resourceVersion":)" + json_quote(precondition) +
         R"(},"status":{"storedVersions":[)" + json_quote(storage_version) + "]}}";
}

std::string_view outcome_name(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::rewritten:
      return "rewritten";
    case WriteOutcome::written_meanwhile:
      return "written_meanwhile";
    case WriteOutcome::gone:
      return "gone";
    case WriteOutcome::refused:
      return "refused";
    case WriteOutcome::interrupted:
      return "interrupted";
  }
  return "interrupted";
}

WriteOutcome classify_write_error(const kube::Error& error) {
  switch (error.reason) {
    case kube::Reason::Conflict:
      return WriteOutcome::written_meanwhile;
    case kube::Reason::NotFound:
      return WriteOutcome::gone;
    case kube::Reason::Forbidden:
      return is_rbac_refusal(error) ? WriteOutcome::interrupted : WriteOutcome::refused;
    case kube::Reason::Invalid:
    case kube::Reason::BadRequest:
      return WriteOutcome::refused;
    default:
      return WriteOutcome::interrupted;
  }
}

std::string refusal_message(const kube::Error& error) {
  static constexpr std::string_view kRbacAdvice = " (the user is authenticated but not allowed";
  const auto advice = error.message.rfind(kRbacAdvice);
  if (error.reason != kube::Reason::Forbidden || advice == std::string::npos) return error.message;
  return error.message.substr(0, advice);
}

void MigrationProgress::forget_all() { *this = MigrationProgress(); }

MigrationProgress::Step MigrationProgress::begin(const CrdStorage& crd) {
  if (!needs_migration(crd)) {
    forget_all();
    return Step::nothing_to_do;
  }
  if (crd.storage_version() != storage_version_) {
    forget_all();
    storage_version_ = crd.storage_version();
  } else if (crd.resource_version == crd_resource_version_) {
    if (!planned_) return Step::list;  // the list of this pass failed: list again
    confirm(crd);
    if (walk_over() && !refused_.empty()) {
      // A new pass over the refused objects alone: the CRD unchanged since the last pass began vouches
      // for every other object (written by us and confirmed, written by someone else, or created since).
      todo_.clear();
      for (const auto& [key, refusal] : refused_) todo_.push_back(refusal.target);
      position_ = 0;
      skipped_ = 0;
    }
    return Step::resume;
  }
  // A new pass under this CRD: writes of the last one not confirmed may have been stored in another
  // version (the CRD changed at some point after they were last confirmed), so they are written again.
  unconfirmed_.clear();
  crd_resource_version_ = crd.resource_version;
  planned_ = false;
  todo_.clear();
  position_ = 0;
  skipped_ = 0;
  return Step::list;
}

void MigrationProgress::plan(const std::vector<MigrationTarget>& listed) {
  std::map<std::string, std::string> still_confirmed;
  std::map<std::string, Refusal> still_refused;
  todo_.clear();
  position_ = 0;
  skipped_ = 0;
  for (const auto& target : listed) {
    const std::string key = target.key();
    if (const auto known = confirmed_.find(key);
        known != confirmed_.end() && known->second == target.resource_version) {
      still_confirmed.insert(*known);
      ++skipped_;
      continue;
    }
    if (const auto refusal = refused_.find(key); refusal != refused_.end()) still_refused.insert(*refusal);
    todo_.push_back(target);
  }
  confirmed_ = std::move(still_confirmed);
  refused_ = std::move(still_refused);
  planned_ = true;
}

bool MigrationProgress::confirm(const CrdStorage& crd) {
  if (crd.storage_version() != storage_version_ || crd.resource_version != crd_resource_version_)
    return false;
  for (auto& [key, resource_version] : unconfirmed_) confirmed_[key] = std::move(resource_version);
  unconfirmed_.clear();
  return true;
}

const MigrationTarget* MigrationProgress::next() const {
  return position_ < todo_.size() ? &todo_[position_] : nullptr;
}

void MigrationProgress::record(const WriteResult& result) {
  if (result.outcome == WriteOutcome::interrupted || walk_over()) return;
  const MigrationTarget& target = todo_[position_];
  const std::string key = target.key();
  if (result.outcome == WriteOutcome::refused) {
    refused_[key] = Refusal{target, result.message};
  } else {
    refused_.erase(key);
    if (result.outcome == WriteOutcome::rewritten) unconfirmed_.emplace_back(key, result.resource_version);
  }
  ++position_;
}

std::size_t MigrationProgress::pending() const { return todo_.size() - std::min(position_, todo_.size()); }

}  // namespace myop::runtime
