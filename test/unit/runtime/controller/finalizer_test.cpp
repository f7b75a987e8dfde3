#include "runtime/controller/finalizer.h"

#include <catch2/catch.hpp>

#include "support/object_builder.h"

using namespace myop;
using namespace myop::runtime;
using myop::runtime::testing::make_object;

namespace {

constexpr std::string_view kFinalizer = "example.com/cleanup";

// The one write the protocol makes, recorded; as the API server, it bumps resourceVersion.
struct Recorder {
  std::vector<std::vector<std::string>> writes;
  std::optional<kube::Error> fail;

  SetFinalizers set_finalizers() {
    return [this](const kube::Object& object,
                  const std::vector<std::string>& finalizers) -> kube::Result<ObjectPointer> {
      writes.push_back(finalizers);
      if (fail) return *fail;
      std::string list;
      for (const auto& finalizer : finalizers) list += (list.empty() ? "\"" : ",\"") + finalizer + "\"";
      return make_object(R"({"metadata":{"namespace":"ns","name":")" + std::string(object.name()) +
                         R"(","resourceVersion":"2","finalizers":[)" + list + "]}}");
    };
  }
};

ObjectPointer object_with(const std::string& finalizers, bool deleting) {
  return make_object(R"({"metadata":{"namespace":"ns","name":"a","resourceVersion":"1","finalizers":[)" +
                     finalizers + "]" + (deleting ? R"(,"deletionTimestamp":"2026-01-01T00:00:00Z")" : "") +
                     "}}");
}

}  // namespace

TEST_CASE("the finalizer is added first, and apply sees the object the write returned",
          "[runtime][finalizer]") {
  Recorder recorder;
  std::string applied_version;
  FinalizerSteps steps;
  steps.apply = [&](const ObjectPointer& object) {
    applied_version = std::string(object->resource_version());
    return ReconcileResult::done();
  };
  steps.cleanup = [](const ObjectPointer&, DependentsPolicy) -> ReconcileResult {
    FAIL("cleanup of a live object");
    return ReconcileResult::done();
  };
  auto result = reconcile_with_finalizer(object_with(R"("other")", false), kFinalizer,
                                         recorder.set_finalizers(), steps);
  CHECK(result.kind() == ReconcileResult::Kind::done);
  REQUIRE(recorder.writes.size() == 1);
  CHECK(recorder.writes[0] == std::vector<std::string>{"other", std::string(kFinalizer)});
  CHECK(applied_version == "2");

  // Present already: no write, straight to apply.
  recorder.writes.clear();
  result = reconcile_with_finalizer(object_with(R"("example.com/cleanup")", false), kFinalizer,
                                    recorder.set_finalizers(), steps);
  CHECK(result.kind() == ReconcileResult::Kind::done);
  CHECK(recorder.writes.empty());
  CHECK(applied_version == "1");
}

TEST_CASE("a failed finalizer write keeps its API error and skips apply", "[runtime][finalizer]") {
  Recorder recorder;
  recorder.fail = kube::make_error(kube::Reason::Conflict, "the object has been modified", 409);
  bool applied = false;
  FinalizerSteps steps;
  steps.apply = [&](const ObjectPointer&) {
    applied = true;
    return ReconcileResult::done();
  };
  steps.cleanup = [](const ObjectPointer&, DependentsPolicy) { return ReconcileResult::done(); };
  auto result =
      reconcile_with_finalizer(object_with("", false), kFinalizer, recorder.set_finalizers(), steps);
  CHECK(result.is_conflict());
  CHECK_FALSE(applied);
}

TEST_CASE("deletion: cleanup until done, then the finalizer goes, never added while deleting",
          "[runtime][finalizer]") {
  Recorder recorder;
  int cleanups = 0;
  std::optional<DependentsPolicy> seen;
  FinalizerSteps steps;
  steps.apply = [](const ObjectPointer&) -> ReconcileResult {
    FAIL("apply of an object being deleted");
    return ReconcileResult::done();
  };
  steps.cleanup = [&](const ObjectPointer&, DependentsPolicy policy) {
    seen = policy;
    ++cleanups;
    if (cleanups == 1) return ReconcileResult::requeue_after(std::chrono::seconds(1));
    return cleanups == 2 ? ReconcileResult::waiting() : ReconcileResult::done();
  };
  const auto deleting = object_with(R"("example.com/cleanup","other")", true);
  auto later = reconcile_with_finalizer(deleting, kFinalizer, recorder.set_finalizers(), steps);
  CHECK(later.kind() == ReconcileResult::Kind::requeue_after);
  CHECK(recorder.writes.empty());
  CHECK(seen == DependentsPolicy::remove);
  // Waiting for a child's deletion event is not done: the finalizer stays.
  auto waiting = reconcile_with_finalizer(deleting, kFinalizer, recorder.set_finalizers(), steps);
  CHECK(waiting.kind() == ReconcileResult::Kind::waiting);
  CHECK(recorder.writes.empty());
  auto done = reconcile_with_finalizer(deleting, kFinalizer, recorder.set_finalizers(), steps);
  CHECK(done.kind() == ReconcileResult::Kind::done);
  REQUIRE(recorder.writes.size() == 1);
  CHECK(recorder.writes[0] == std::vector<std::string>{"other"});

  // Deleting without our finalizer: nothing to do, nothing added.
  recorder.writes.clear();
  CHECK(
      reconcile_with_finalizer(object_with(R"("other")", true), kFinalizer, recorder.set_finalizers(), steps)
          .kind() == ReconcileResult::Kind::done);
  CHECK(recorder.writes.empty());

  // Gone already when the finalizer is removed: fine.
  recorder.fail = kube::make_error(kube::Reason::NotFound, "not found", 404);
  CHECK(reconcile_with_finalizer(deleting, kFinalizer, recorder.set_finalizers(), steps).kind() ==
        ReconcileResult::Kind::done);
}

TEST_CASE("propagationPolicy Orphan reaches cleanup as keep", "[runtime][finalizer]") {
  Recorder recorder;
  std::optional<DependentsPolicy> seen;
  FinalizerSteps steps;
  steps.apply = [](const ObjectPointer&) { return ReconcileResult::done(); };
  steps.cleanup = [&](const ObjectPointer&, DependentsPolicy policy) {
    seen = policy;
    return ReconcileResult::done();
  };
  reconcile_with_finalizer(object_with(R"("orphan","example.com/cleanup")", true), kFinalizer,
                           recorder.set_finalizers(), steps);
  CHECK(seen == DependentsPolicy::keep);
  REQUIRE(recorder.writes.size() == 1);
  CHECK(recorder.writes[0] == std::vector<std::string>{"orphan"});
}
