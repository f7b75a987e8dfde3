#include "runtime/migration/storage_migration_plan.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "kube/errors.h"
#include "runtime/logging.h"

using namespace myop;
using namespace myop::runtime;

namespace {

rapidjson::Document json(const std::string& text) {
  rapidjson::Document document;
  document.Parse(text.c_str(), text.size());
  REQUIRE_FALSE(document.HasParseError());
  return document;
}

const char* const kCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "myresources.myorg.io", "resourceVersion": "812"},
  "spec": {"group": "myorg.io", "scope": "Namespaced",
           "names": {"plural": "myresources", "kind": "MyResource"},
           "versions": [{"name": "v1alpha1", "served": true, "storage": false},
                        {"name": "v1beta1", "served": true, "storage": true}]},
  "status": {"storedVersions": ["v1alpha1", "v1beta1"]}})";

}  // namespace

TEST_CASE("storage migration reads the storage version and storedVersions of a CRD", "[storage-migration]") {
  auto crd = read_crd_storage(json(kCrd));
  REQUIRE(crd);
  CHECK(crd->name == "myresources.myorg.io");
  CHECK(crd->resource_version == "812");
  CHECK(crd->storage_version() == "v1beta1");
  CHECK(crd->stored_versions == std::vector<std::string>{"v1alpha1", "v1beta1"});
  // The objects are listed and written in the storage version.
  CHECK(crd->type.api_version() == "myorg.io/v1beta1");
  CHECK(crd->type.resource == "myresources");
  CHECK(crd->type.namespaced);
  CHECK(needs_migration(*crd));

  SECTION("only the storage version stored: nothing to do") {
    crd->stored_versions = {"v1beta1"};
    CHECK_FALSE(needs_migration(*crd));
  }
  SECTION("a rollback: the old version stores again, the new one is left in storedVersions") {
    crd->type.version = "v1alpha1";
    CHECK(needs_migration(*crd));
  }
  SECTION("a cluster-scoped CRD") {
    auto cluster = read_crd_storage(
        json(std::string(kCrd).replace(std::string(kCrd).find("Namespaced"), 10, "Cluster")));
    REQUIRE(cluster);
    CHECK_FALSE(cluster->type.namespaced);
  }
}

TEST_CASE("storage migration refuses a CRD without a storage version, naming it", "[storage-migration]") {
  std::string text = kCrd;
  text.replace(text.find(R"("storage": true)"), 15, R"("storage": false)");
  const auto crd = read_crd_storage(json(text));
  REQUIRE_FALSE(crd);
  CHECK_THAT(crd.error().message,
             Catch::Contains("myresources.myorg.io") && Catch::Contains("storage: true"));
  const auto bare = read_crd_storage(json(R"({"metadata": {"name": "x.y"}, "spec": {}})"));
  REQUIRE_FALSE(bare);
  CHECK_THAT(bare.error().message, Catch::Contains("x.y") && Catch::Contains("spec.group"));
}

TEST_CASE("storage migration writes nothing but the resourceVersion precondition", "[storage-migration]") {
  const auto patch = json(no_op_patch("4711"));
  CHECK(patch.MemberCount() == 1);
  CHECK(patch["metadata"].MemberCount() == 1);
  CHECK(std::string(patch["metadata"]["resourceVersion"].GetString()) == "4711");
  // The resourceVersion is opaque text, quoted whatever it holds.
  CHECK(std::string(json(no_op_patch(R"(a"b)"))["metadata"]["resourceVersion"].GetString()) == R"(a"b)");
}

TEST_CASE("storage migration trims storedVersions to the storage version under the given resourceVersion",
          "[storage-migration]") {
  const auto patch = json(trim_stored_versions_patch("v1beta1", "812"));
  CHECK(std::string(patch["metadata"]["resourceVersion"].GetString()) == "812");
  const auto& stored = patch["status"]["storedVersions"];
  REQUIRE(stored.IsArray());
  REQUIRE(stored.Size() == 1);
  CHECK(std::string(stored[0].GetString()) == "v1beta1");
}

namespace {

// A metav1.Status answer as the API server sends it.
kube::Error status(int code, const std::string& reason, const std::string& message) {
  return kube::error_from_response(
      code, R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)" +
                runtime::json_quote(message) + R"(,"reason":")" + reason + R"(","code":)" +
                std::to_string(code) + "}");
}

}  // namespace

TEST_CASE("storage migration: what an answer to a no-op write means", "[storage-migration]") {
  CHECK(classify_write_error(status(409, "Conflict",
                                    R"(Operation cannot be fulfilled on myresources.myorg.io "web": the )"
                                    R"(object has been modified; please apply your changes to the latest )"
                                    R"(version and try again)")) == WriteOutcome::written_meanwhile);
  CHECK(classify_write_error(status(404, "NotFound", R"(myresources.myorg.io "web" not found)")) ==
        WriteOutcome::gone);

  SECTION("refused by admission or validation: skipped and reported") {
    // A ValidatingAdmissionPolicy with reason Forbidden (k8s.io/apiserver's policy dispatcher).
    const auto denied = status(
        403, "Forbidden",
        R"(myresources.myorg.io "web" is forbidden: ValidatingAdmissionPolicy 'myorg.io-tenant-resource-limits' )"
        R"(with binding 'limits' denied request: every container must set limits)");
    CHECK(classify_write_error(denied) == WriteOutcome::refused);
    // Reported in the API server's words, without the advice to grant RBAC.
    CHECK(
        refusal_message(denied) ==
        R"(myresources.myorg.io "web" is forbidden: ValidatingAdmissionPolicy 'myorg.io-tenant-resource-limits' )"
        R"(with binding 'limits' denied request: every container must set limits)");
    // The same with reason Invalid (422), and an admission webhook's denial (400 when it gave no code).
    CHECK(
        classify_write_error(status(
            422, "Invalid",
            R"(myresources.myorg.io "web" is invalid: ValidatingAdmissionPolicy 'myorg.io-pinned-image-tags' )"
            R"(with binding 'pinned' denied request: images must not use :latest)")) ==
        WriteOutcome::refused);
    CHECK(classify_write_error(status(
              400, "BadRequest", R"(admission webhook "validate.kyverno.svc" denied the request: no)")) ==
          WriteOutcome::refused);
    // A webhook that answers 403 Forbidden.
    CHECK(classify_write_error(status(403, "Forbidden",
                                      R"(admission webhook "policy.example.com" denied the request: old)")) ==
          WriteOutcome::refused);
  }
  SECTION("nothing learnt about the object: the pass stops and resumes later") {
    CHECK(classify_write_error(status(500, "InternalError",
                                      R"(Internal error occurred: conversion webhook for myorg.io/v1alpha1 )"
                                      R"(failed: connection refused)")) == WriteOutcome::interrupted);
    CHECK(classify_write_error(status(503, "ServiceUnavailable", "the server is shutting down")) ==
          WriteOutcome::interrupted);
    CHECK(classify_write_error(status(504, "Timeout", "request timed out")) == WriteOutcome::interrupted);
    CHECK(classify_write_error(status(429, "TooManyRequests", "too many requests")) ==
          WriteOutcome::interrupted);
    CHECK(classify_write_error(kube::make_error(kube::Reason::Transport, "connection reset")) ==
          WriteOutcome::interrupted);
    CHECK(classify_write_error(kube::make_error(kube::Reason::Cancelled, "stopped")) ==
          WriteOutcome::interrupted);
    // RBAC refusing the operator itself refuses every object alike: not the object's fault.
    CHECK(classify_write_error(status(
              403, "Forbidden",
              R"(myresources.myorg.io "web" is forbidden: User "system:serviceaccount:ops:my-operator" )"
              R"(cannot patch resource "myresources" in API group "myorg.io" in the namespace "team-a")")) ==
          WriteOutcome::interrupted);
  }
}

namespace {

CrdStorage crd_at(const std::string& resource_version, const std::string& storage = "v1beta1",
                  std::vector<std::string> stored = {"v1alpha1", "v1beta1"}) {
  CrdStorage crd;
  crd.name = "myresources.myorg.io";
  crd.resource_version = resource_version;
  crd.type = {"myorg.io", storage, "myresources", true, "MyResource"};
  crd.stored_versions = std::move(stored);
  return crd;
}

MigrationTarget target(const std::string& name, const std::string& resource_version) {
  return {"team-a", name, "uid-" + name, resource_version};
}

std::vector<MigrationTarget> objects(int count, const std::string& resource_version = "1") {
  std::vector<MigrationTarget> listed;
  for (int i = 0; i < count; ++i) listed.push_back(target("app-" + std::to_string(i), resource_version));
  return listed;
}

WriteResult rewritten(const std::string& resource_version) {
  return {WriteOutcome::rewritten, resource_version, {}};
}
WriteResult refused(const std::string& message) { return {WriteOutcome::refused, {}, message}; }
WriteResult outcome(WriteOutcome what) { return {what, {}, {}}; }

// Walks the pass, answering every write with `answer(name)`; the names written, in order.
std::vector<std::string> walk(MigrationProgress& progress,
                              const std::function<WriteResult(const std::string&)>& answer) {
  std::vector<std::string> written;
  while (const auto* next = progress.next()) {
    written.push_back(next->name);
    progress.record(answer(next->name));
  }
  return written;
}

WriteResult all_rewritten(const std::string&) { return rewritten("2"); }

}  // namespace

TEST_CASE("storage migration: a pass writes every listed object once and trims under the CRD read before it",
          "[storage-migration]") {
  MigrationProgress progress;
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::list);
  progress.plan(objects(3));
  CHECK(progress.pending() == 3);
  CHECK_FALSE(progress.may_trim());
  CHECK(walk(progress, all_rewritten) == std::vector<std::string>{"app-0", "app-1", "app-2"});
  CHECK(progress.pending() == 0);
  CHECK(progress.may_trim());
  CHECK(progress.trim_precondition() == "100");
  CHECK(progress.storage_version() == "v1beta1");

  SECTION("a CRD that needs nothing: nothing to do, everything forgotten") {
    CHECK(progress.begin(crd_at("101", "v1beta1", {"v1beta1"})) == MigrationProgress::Step::nothing_to_do);
    CHECK_FALSE(progress.may_trim());
    CHECK(progress.pending() == 0);
  }
  SECTION("409 and 404 end an object's part in the pass as a rewrite does") {
    MigrationProgress other;
    REQUIRE(other.begin(crd_at("100")) == MigrationProgress::Step::list);
    other.plan(objects(2));
    other.record(outcome(WriteOutcome::written_meanwhile));
    other.record(outcome(WriteOutcome::gone));
    CHECK(other.may_trim());
  }
}

TEST_CASE("storage migration: an interrupted pass resumes at the object it stopped at",
          "[storage-migration]") {
  MigrationProgress progress;
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::list);
  progress.plan(objects(5));
  std::vector<std::string> written;
  for (int i = 0; i < 2; ++i) {
    written.push_back(progress.next()->name);
    progress.record(rewritten("2"));
  }
  // A 503 on app-2: nothing recorded about it, it stays next.
  written.push_back(progress.next()->name);
  progress.record(outcome(WriteOutcome::interrupted));
  CHECK(progress.next()->name == "app-2");

  SECTION("the CRD unchanged: the same pass goes on, every object written once") {
    REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::resume);
    const auto rest = walk(progress, all_rewritten);
    written.insert(written.end(), rest.begin(), rest.end());
    CHECK(written == std::vector<std::string>{"app-0", "app-1", "app-2", "app-2", "app-3", "app-4"});
    CHECK(rest == std::vector<std::string>{"app-2", "app-3", "app-4"});
    CHECK(progress.may_trim());
    CHECK(progress.trim_precondition() == "100");
  }
  SECTION("the CRD changed meanwhile (same storage version): a new pass skips what was confirmed") {
    // The writes of app-0 and app-1 were confirmed by a read of the CRD under the pass's resourceVersion.
    REQUIRE(progress.confirm(crd_at("100")));
    REQUIRE(progress.begin(crd_at("180")) == MigrationProgress::Step::list);
    // app-1 was written since (resourceVersion 9), app-5 is new.
    auto listed = objects(5, "1");
    listed[0].resource_version = "2";
    listed[1].resource_version = "9";
    listed.push_back(target("app-5", "150"));
    progress.plan(listed);
    CHECK(progress.skipped() == 1);
    CHECK(walk(progress, all_rewritten) ==
          std::vector<std::string>{"app-1", "app-2", "app-3", "app-4", "app-5"});
    CHECK(progress.trim_precondition() == "180");
  }
  SECTION("a list that failed is asked for again, under the same pass") {
    MigrationProgress fresh;
    REQUIRE(fresh.begin(crd_at("100")) == MigrationProgress::Step::list);
    REQUIRE(fresh.begin(crd_at("100")) == MigrationProgress::Step::list);
    fresh.plan(objects(1));
    CHECK(fresh.trim_precondition() == "100");
  }
}

TEST_CASE("storage migration: refused objects are skipped, keep the trim waiting and alone are retried",
          "[storage-migration]") {
  MigrationProgress progress;
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::list);
  progress.plan(objects(4));
  const auto first = walk(progress, [](const std::string& name) {
    return name == "app-1" ? refused("ValidatingAdmissionPolicy 'limits' denied request") : rewritten("2");
  });
  CHECK(first == std::vector<std::string>{"app-0", "app-1", "app-2", "app-3"});
  CHECK(progress.walk_over());
  CHECK_FALSE(progress.may_trim());
  REQUIRE(progress.refused().size() == 1);
  CHECK(progress.refused().at("team-a/app-1").message == "ValidatingAdmissionPolicy 'limits' denied request");
  CHECK(progress.refused().at("team-a/app-1").target.uid == "uid-app-1");
  CHECK(progress.is_refused("team-a/app-1"));

  // The next pass (the CRD unchanged) writes the refused object only.
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::resume);
  CHECK(progress.pending() == 1);
  CHECK(walk(progress, [](const std::string&) { return refused("still refused"); }) ==
        std::vector<std::string>{"app-1"});
  CHECK_FALSE(progress.may_trim());
  CHECK(progress.refused().at("team-a/app-1").message == "still refused");

  SECTION("fixed by its owner: the write with the old resourceVersion gets a 409, the trim may go") {
    REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::resume);
    CHECK(walk(progress, [](const std::string&) { return outcome(WriteOutcome::written_meanwhile); }) ==
          std::vector<std::string>{"app-1"});
    CHECK(progress.refused().empty());
    CHECK(progress.may_trim());
    // Under the resourceVersion of the CRD read before the first pass: it vouches for every write since.
    CHECK(progress.trim_precondition() == "100");
  }
  SECTION("the CRD changed: the new pass lists again; the refused object stays reported until written") {
    REQUIRE(progress.confirm(crd_at("100")));
    REQUIRE(progress.begin(crd_at("140")) == MigrationProgress::Step::list);
    CHECK(progress.refused().size() == 1);
    auto listed = objects(4, "2");
    listed[1].resource_version = "1";  // the refused one, unchanged
    progress.plan(listed);
    CHECK(progress.skipped() == 3);
    CHECK(walk(progress, all_rewritten) == std::vector<std::string>{"app-1"});
    CHECK(progress.refused().empty());
    CHECK(progress.may_trim());
    CHECK(progress.trim_precondition() == "140");
  }
  SECTION("deleted while refused: forgotten by the next list") {
    REQUIRE(progress.begin(crd_at("140")) == MigrationProgress::Step::list);
    auto listed = objects(4, "2");
    listed.erase(listed.begin() + 1);
    progress.plan(listed);
    CHECK(progress.refused().empty());
  }
}

TEST_CASE("storage migration: writes are trusted across a CRD change only once confirmed",
          "[storage-migration]") {
  MigrationProgress progress;
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::list);
  progress.plan(objects(4));
  progress.record(rewritten("2"));  // app-0
  progress.record(rewritten("2"));  // app-1
  REQUIRE(progress.confirm(crd_at("100")));
  progress.record(rewritten("2"));  // app-2: the CRD may have changed before this write landed
  // The check after app-2 finds the CRD changed: its storage version may have flipped to v1alpha1 and
  // back, and app-2's write may have been stored as v1alpha1.
  CHECK_FALSE(progress.confirm(crd_at("130")));
  REQUIRE(progress.begin(crd_at("130")) == MigrationProgress::Step::list);
  progress.plan(objects(4, "2"));
  CHECK(progress.skipped() == 2);
  CHECK(walk(progress, all_rewritten) == std::vector<std::string>{"app-2", "app-3"});
  CHECK(progress.trim_precondition() == "130");
}

TEST_CASE("storage migration: another storage version forgets everything", "[storage-migration]") {
  MigrationProgress progress;
  REQUIRE(progress.begin(crd_at("100")) == MigrationProgress::Step::list);
  progress.plan(objects(2));
  walk(progress, all_rewritten);
  REQUIRE(progress.confirm(crd_at("100")));

  SECTION("a rollback to v1alpha1: objects confirmed in v1beta1 are written again") {
    REQUIRE(progress.begin(crd_at("120", "v1alpha1")) == MigrationProgress::Step::list);
    progress.plan(objects(2, "2"));
    CHECK(progress.skipped() == 0);
    CHECK(progress.storage_version() == "v1alpha1");
  }
  SECTION("a flip and a flip back seen by the migrator: nothing carried over either") {
    REQUIRE(progress.begin(crd_at("120", "v1alpha1")) == MigrationProgress::Step::list);
    REQUIRE(progress.begin(crd_at("125", "v1beta1")) == MigrationProgress::Step::list);
    progress.plan(objects(2, "2"));
    CHECK(progress.skipped() == 0);
    CHECK(progress.trim_precondition() == "125");
  }
  SECTION("a flip and a flip back unseen: the trim's precondition is the resourceVersion before them") {
    // Between two reads the CRD went v1beta1 -> v1alpha1 -> v1beta1 (resourceVersion 100 -> 125).
    CHECK_FALSE(progress.confirm(crd_at("125")));
    CHECK(progress.trim_precondition() == "100");  // the API server answers the trim with a conflict
  }
}
