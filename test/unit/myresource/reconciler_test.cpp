#include "myresource/reconciler.h"

#include <catch2/catch.hpp>
#include <map>

#include "fixtures.h"
#include "myresource/desired.h"
#include "myresource/owned_fields.h"
#include "support/fake_clock.h"

using namespace myop::myresource;
using namespace myop::myresource::testing;
using namespace std::chrono;
using myop::kube::JsonValue;
using myop::kube::Object;
using myop::kube::Result;
using myop::runtime::ReconcileRequest;
using myop::runtime::ReconcileResult;

namespace {

const WallTime kNow = sys_days(year(2026) / 3 / 1) + hours(12);

// An in-memory cluster: objects as the API server would store them, counting every write.
class FakeCluster final : public Cluster {
 public:
  std::map<std::string, ObjectPointer> myresources;
  std::map<std::string, ObjectPointer> deployments;
  Features flags;
  int deployment_applies = 0;
  int deployment_deletes = 0;
  int finalizer_writes = 0;
  int status_writes = 0;
  std::optional<myop::kube::Error> fail_deletes;
  std::optional<myop::kube::Error> fail_status_writes;
  bool conflict_on_next_finalizer_write = false;
  // Foreground deletions stay (deletionTimestamp, foregroundDeletion finalizer) instead of completing.
  bool garbage_collector_stuck = false;
  struct Delete {
    std::string name;
    Propagation propagation;
  };
  std::vector<Delete> deletes;
  // As the API server: every apply moves metadata.generation (the fake applies only on changes), and
  // the Deployment controller's status.observedGeneration lags until roll_out().
  bool generations = false;
  struct Event {
    std::string type, reason, message;
  };
  std::vector<Event> events;

  int writes() const { return deployment_applies + deployment_deletes + finalizer_writes + status_writes; }

  ObjectPointer get_myresource(std::string_view, std::string_view name) override {
    return find(myresources, name);
  }
  ObjectPointer get_deployment(std::string_view, std::string_view name) override {
    return find(deployments, name);
  }
  Features features() override { return flags; }

  Result<ObjectPointer> apply_deployment(const Object& desired, std::stop_token) override {
    ++deployment_applies;
    std::string name(desired.name());
    Object stored = parse_json(desired.to_json_string());
    stored.set_string_member(stored.json()["metadata"], "uid", "dep-" + name);
    stored.set_resource_version(std::to_string(++resource_version_));
    auto previous = find(deployments, name);
    if (previous && previous->view().find({"status"})) {
      stored.set_member(stored.json(), "status", *previous->view().find({"status"}));
    }
    if (generations) {
      stored.set_member(stored.json()["metadata"], "generation",
                        JsonValue(static_cast<int64_t>(previous ? previous->view().generation() + 1 : 1)));
    }
    deployments[name] = std::make_shared<const Object>(std::move(stored));
    return deployments[name];
  }

  Result<ObjectPointer> delete_deployment(std::string_view, std::string_view name, std::string_view,
                                          Propagation propagation, std::stop_token) override {
    ++deployment_deletes;
    deletes.push_back({std::string(name), propagation});
    if (fail_deletes) return *fail_deletes;
    if (propagation == Propagation::foreground && garbage_collector_stuck) {
      // The API server: deletionTimestamp and the foregroundDeletion finalizer; a garbage collector
      // that never finishes it.
      edit_deployment(std::string(name), [&](Object& object) {
        object.set_string_member(object.json()["metadata"], "deletionTimestamp", "2026-03-01T12:00:00Z");
        JsonValue finalizers(rapidjson::kArrayType);
        finalizers.PushBack(JsonValue("foregroundDeletion", object.allocator()), object.allocator());
        object.set_member(object.json()["metadata"], "finalizers", finalizers);
      });
      return deployments[std::string(name)];
    }
    deployments.erase(std::string(name));
    return ObjectPointer();
  }

  Result<ObjectPointer> set_myresource_finalizers(const Object& current,
                                                  const std::vector<std::string>& finalizers,
                                                  std::stop_token) override {
    ++finalizer_writes;
    const std::string name(current.name());
    if (std::exchange(conflict_on_next_finalizer_write, false)) {
      return myop::kube::make_error(myop::kube::Reason::Conflict, "the object has been modified", 409);
    }
    // As the API server: the resourceVersion in the patch is a precondition.
    if (find(myresources, name)->resource_version() != current.resource_version()) {
      return myop::kube::make_error(myop::kube::Reason::Conflict, "the object has been modified", 409);
    }
    Object updated = find(myresources, name)->deep_copy();
    JsonValue list(rapidjson::kArrayType);
    for (const std::string& finalizer : finalizers)
      list.PushBack(JsonValue(finalizer.c_str(), updated.allocator()), updated.allocator());
    updated.set_member(updated.json()["metadata"], "finalizers", list);
    store_myresource(std::move(updated));
    return find(myresources, name);
  }

  Result<ObjectPointer> apply_myresource_status(const Object& body, std::stop_token) override {
    ++status_writes;
    if (fail_status_writes) return *fail_status_writes;
    Object updated = find(myresources, body.name())->deep_copy();
    updated.set_member(updated.json(), "status", *body.view().find({"status"}));
    store_myresource(std::move(updated));
    return find(myresources, body.name());
  }

  void record_event(const EventSubject&, std::string_view type, std::string_view reason, std::string_view,
                    std::string_view message) override {
    events.push_back({std::string(type), std::string(reason), std::string(message)});
  }

  void store_myresource(Object object) {
    object.set_resource_version(std::to_string(++resource_version_));
    std::string name(object.name());
    myresources[name] = std::make_shared<const Object>(std::move(object));
  }

  // The Deployment controller and kubelet: the Deployment becomes fully available (or not).
  void roll_out(const std::string& name, int available) {
    Object updated = find(deployments, name)->deep_copy();
    const JsonValue* replicas = updated.view().find({"spec", "replicas"});
    int desired = replicas ? replicas->GetInt() : 1;
    std::string status = R"({"observedGeneration":)" + std::to_string(updated.view().generation()) +
                         R"(,"replicas":)" + std::to_string(desired) + R"(,"updatedReplicas":)" +
                         std::to_string(desired) + R"(,"readyReplicas":)" + std::to_string(available) +
                         R"(,"availableReplicas":)" + std::to_string(available) + "}";
    Object parsed = parse_json(status);
    updated.set_member(updated.json(), "status", parsed.json());
    deployments[name] = std::make_shared<const Object>(std::move(updated));
  }

  void edit_deployment(const std::string& name, const std::function<void(Object&)>& edit) {
    Object updated = find(deployments, name)->deep_copy();
    edit(updated);
    deployments[name] = std::make_shared<const Object>(std::move(updated));
  }

  void edit_myresource(const std::string& name, const std::function<void(Object&)>& edit) {
    Object updated = find(myresources, name)->deep_copy();
    edit(updated);
    store_myresource(std::move(updated));
  }

 private:
  static ObjectPointer find(const std::map<std::string, ObjectPointer>& objects, std::string_view name) {
    auto found = objects.find(std::string(name));
    return found == objects.end() ? nullptr : found->second;
  }
  int resource_version_ = 100;
};

struct Fixture {
  std::shared_ptr<FakeCluster> cluster = std::make_shared<FakeCluster>();
  std::shared_ptr<myop::testing::FakeClock> clock =
      std::make_shared<myop::testing::FakeClock>(myop::base::TimePoint{} + hours(1), kNow);
  MyResourceReconciler reconciler{cluster, ReconcilerOptions{.clock = clock}};

  explicit Fixture(const std::string& spec = R"({"image":"reg:5000/app:1.0","replicas":2,"port":8080})",
                   const std::string& annotations = "{}") {
    cluster->store_myresource(parse_json(
        R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",
            "uid":"mr-1","generation":1,"annotations":)" +
        annotations + R"(},"spec":)" + spec + "}"));
  }

  ReconcileResult reconcile() {
    ReconcileRequest request;
    request.key = {"team-a", "web"};
    return reconciler.reconcile(request);
  }

  MyResource resource() { return parse_myresource(cluster->myresources.at("web")->json()).resource; }

  Condition condition(std::string_view type) {
    MyResource current = resource();
    const Condition* found = find_condition(current.status.conditions, type);
    REQUIRE(found != nullptr);
    return *found;
  }

  // kubectl delete: the API server sets deletionTimestamp; finalizers hold the object.
  void begin_deletion() {
    cluster->edit_myresource("web", [](Object& object) {
      object.set_string_member(object.json()["metadata"], "deletionTimestamp", "2026-03-01T12:00:00Z");
    });
  }

  void set_spec_image(const std::string& image) {
    cluster->edit_myresource("web", [&](Object& object) {
      object.set_string_member(object.json()["spec"], "image", image);
      object.set_member(object.json()["metadata"], "generation", JsonValue(2));
    });
  }
};

}  // namespace

TEST_CASE("create: finalizer, hardened Deployment, status, then zero writes", "[myresource][reconciler]") {
  Fixture fixture;
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK(fixture.resource().metadata.has_finalizer(kFinalizer));
  REQUIRE(fixture.cluster->deployments.count("web") == 1);
  auto deployment = fixture.cluster->deployments.at("web");
  CHECK(deployment->view().controller_owner()->uid == "mr-1");
  CHECK(fixture.cluster->deployment_applies == 1);
  CHECK(fixture.condition("Ready").reason == "RollingOut");
  CHECK(fixture.resource().status.observed_generation == 1);

  int writes = fixture.cluster->writes();
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK(fixture.cluster->writes() == writes);  // steady: nothing changed, nothing written

  fixture.cluster->roll_out("web", 2);
  fixture.reconcile();
  CHECK(fixture.condition("Ready").status == ConditionStatus::True);
  CHECK(fixture.resource().status.replica_summary == "2/2");
  CHECK(fixture.cluster->writes() == writes + 1);  // the status, once
  fixture.clock->advance(hours(10));               // a resync much later
  fixture.reconcile();
  CHECK(fixture.cluster->writes() == writes + 1);
}

TEST_CASE("a spec change applies the Deployment exactly once", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.reconcile();
  fixture.cluster->roll_out("web", 2);
  fixture.reconcile();
  int applies = fixture.cluster->deployment_applies;
  fixture.set_spec_image("reg:5000/app:1.1");
  fixture.reconcile();
  fixture.reconcile();
  CHECK(fixture.cluster->deployment_applies == applies + 1);
  CHECK(fixture.resource().status.observed_generation == 2);
}

TEST_CASE("a hand edit of an owned field is put back", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.reconcile();
  int applies = fixture.cluster->deployment_applies;
  fixture.cluster->edit_deployment("web", [](Object& deployment) {
    deployment.set_member(deployment.json()["spec"], "replicas", JsonValue(7));
  });
  fixture.reconcile();
  CHECK(fixture.cluster->deployment_applies == applies + 1);
  CHECK(fixture.cluster->deployments.at("web")->view().find({"spec", "replicas"})->GetInt() == 2);
}

TEST_CASE("an invalid spec is Degraded/InvalidSpec, not retried, nothing deployed",
          "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"nginx:latest"})");
  ReconcileResult result = fixture.reconcile();
  CHECK(result.kind() == ReconcileResult::Kind::terminal_error);
  CHECK(fixture.cluster->deployments.empty());
  CHECK(fixture.condition("Degraded").reason == "InvalidSpec");
  CHECK_THAT(fixture.condition("Degraded").message, Catch::Contains(":latest"));
  REQUIRE_FALSE(fixture.cluster->events.empty());
  CHECK(fixture.cluster->events.back().type == "Warning");
  CHECK(fixture.cluster->events.back().reason == "InvalidSpec");
  int writes = fixture.cluster->writes();
  fixture.reconcile();
  CHECK(fixture.cluster->writes() == writes);
}

TEST_CASE("paused: nothing changes, and status says so", "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","paused":true})");
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.empty());
  CHECK(fixture.condition("Progressing").reason == "Paused");
}

TEST_CASE("deletion removes children, waits, then drops the finalizer", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.reconcile();
  fixture.begin_deletion();
  fixture.cluster->fail_deletes =
      myop::kube::make_error(myop::kube::Reason::Forbidden, "deployments is forbidden", 403);
  ReconcileResult failed = fixture.reconcile();
  CHECK(failed.kind() == ReconcileResult::Kind::error);
  CHECK(fixture.condition("Degraded").reason == "CleanupFailed");
  CHECK(fixture.resource().metadata.has_finalizer(kFinalizer));
  CHECK(fixture.cluster->events.back().type == "Warning");
  CHECK(fixture.cluster->events.back().reason == "CleanupFailed");

  fixture.cluster->fail_deletes.reset();
  ReconcileResult deleting = fixture.reconcile();
  CHECK(fixture.cluster->deployments.empty());
  CHECK(deleting.kind() == ReconcileResult::Kind::waiting);  // deleted, not yet seen gone: the event will say
  CHECK(fixture.resource().metadata.has_finalizer(kFinalizer));
  ReconcileResult deleted = fixture.reconcile();
  CHECK(deleted.kind() == ReconcileResult::Kind::done);
  CHECK_FALSE(fixture.resource().metadata.has_finalizer(kFinalizer));
}

TEST_CASE("deletion with propagationPolicy Orphan keeps the children and drops the finalizer",
          "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","replicas":2})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"2.0"})");
  fixture.reconcile();
  fixture.reconcile();
  REQUIRE(fixture.cluster->deployments.size() == 2);  // stable and canary
  fixture.cluster->edit_myresource("web", [](Object& object) {
    object.set_string_member(object.json()["metadata"], "deletionTimestamp", "2026-03-01T12:00:00Z");
    JsonValue finalizers(rapidjson::kArrayType);
    finalizers.PushBack(JsonValue("orphan", object.allocator()), object.allocator());
    finalizers.PushBack(JsonValue("myorg.io/finalizer", object.allocator()), object.allocator());
    object.set_member(object.json()["metadata"], "finalizers", finalizers);
  });
  const int deletes = fixture.cluster->deployment_deletes;
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK(fixture.cluster->deployment_deletes == deletes);
  CHECK(fixture.cluster->deployments.size() == 2);
  CHECK_FALSE(fixture.resource().metadata.has_finalizer(kFinalizer));
  CHECK(fixture.resource().metadata.has_finalizer("orphan"));  // the garbage collector's, not ours
}

TEST_CASE("a same-named Deployment of someone else is never taken over", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.cluster->deployments["web"] = std::make_shared<const Object>(parse_json(
      R"({"metadata":{"name":"web","uid":"foreign","labels":{"app":"other"}},"spec":{"replicas":1}})"));
  ReconcileResult result = fixture.reconcile();
  CHECK(result.kind() == ReconcileResult::Kind::error);
  CHECK(fixture.cluster->deployment_applies == 0);
  CHECK(fixture.condition("Degraded").reason == "ReconcileError");
  CHECK_THAT(fixture.condition("Degraded").message, Catch::Contains("not controlled by this MyResource"));
}

TEST_CASE("an ownerless Deployment with our labels is adopted", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.cluster->deployments["web"] = std::make_shared<const Object>(parse_json(
      R"({"metadata":{"name":"web","uid":"orphan","labels":{"app.kubernetes.io/name":"web",
          "app.kubernetes.io/managed-by":"my-operator","myorg.io/myresource":"web","myorg.io/track":"stable"}},
          "spec":{"replicas":1}})"));
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK(fixture.cluster->deployment_applies == 1);
  CHECK(fixture.cluster->deployments.at("web")->view().controller_owner()->uid == "mr-1");
}

TEST_CASE("canary: start, removal when the annotation goes", "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","replicas":2})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  ReconcileResult result = fixture.reconcile();
  CHECK(result.kind() == ReconcileResult::Kind::requeue_after);  // to notice the deadline
  REQUIRE(fixture.cluster->deployments.count("web-canary") == 1);
  CHECK(fixture.condition("Canary").reason == "CanaryRunning");
  CHECK(fixture.resource().status.canary_image == "reg:5000/app:1.1");

  fixture.cluster->roll_out("web-canary", 1);
  fixture.cluster->roll_out("web", 2);
  fixture.reconcile();
  int writes = fixture.cluster->writes();
  fixture.reconcile();
  CHECK(fixture.cluster->writes() == writes);  // running canary, steady: no writes

  fixture.cluster->edit_myresource("web", [](Object& object) { object.erase_annotation("myorg.io/canary"); });
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(find_condition(fixture.resource().status.conditions, "Canary") == nullptr);
  CHECK(fixture.cluster->deployments.count("web") == 1);
}

namespace {

// The fixture's MyResource replaced by a v1beta1 object with these annotations and spec.
void store_v1beta1(Fixture& fixture, const std::string& spec, const std::string& annotations) {
  fixture.cluster->myresources.clear();
  fixture.cluster->store_myresource(parse_json(
      R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",
          "uid":"mr-1","generation":1,"annotations":)" +
      annotations + R"(},"spec":)" + spec + "}"));
}

std::vector<FakeCluster::Event> events_of(const FakeCluster& cluster, const std::string& reason) {
  std::vector<FakeCluster::Event> found;
  for (const auto& event : cluster.events)
    if (event.reason == reason) found.push_back(event);
  return found;
}

}  // namespace

TEST_CASE(
    "a child stuck in foreground deletion is deleted again in background, after its grace period "
    "and the timeout",
    "[myresource][reconciler]") {
  Fixture fixture;
  fixture.reconcile();
  fixture.cluster->garbage_collector_stuck = true;
  fixture.begin_deletion();
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::waiting);  // asked; its event comes back
  REQUIRE(fixture.cluster->deletes.size() == 1);
  CHECK(fixture.cluster->deletes[0].propagation == Propagation::foreground);

  // Being deleted (since kNow): no second DELETE, a look again when it would count as stuck
  // (default grace period 30 s plus the 60 s timeout).
  ReconcileResult waiting = fixture.reconcile();
  REQUIRE(waiting.kind() == ReconcileResult::Kind::requeue_after);
  CHECK(waiting.delay() == seconds(90));
  CHECK(fixture.cluster->deletes.size() == 1);
  fixture.clock->advance(seconds(60));
  ReconcileResult still_waiting = fixture.reconcile();
  REQUIRE(still_waiting.kind() == ReconcileResult::Kind::requeue_after);
  CHECK(still_waiting.delay() == seconds(30));
  CHECK(fixture.cluster->deletes.size() == 1);
  CHECK(events_of(*fixture.cluster, "ForegroundDeletionStuck").empty());

  // Stuck: deleted again in background, which the API server completes at once; a Warning event.
  fixture.clock->advance(seconds(30));
  fixture.reconcile();
  REQUIRE(fixture.cluster->deletes.size() == 2);
  CHECK(fixture.cluster->deletes[1].name == "web");
  CHECK(fixture.cluster->deletes[1].propagation == Propagation::background);
  CHECK(fixture.cluster->deployments.empty());
  auto stuck = events_of(*fixture.cluster, "ForegroundDeletionStuck");
  REQUIRE(stuck.size() == 1);
  CHECK(stuck[0].type == "Warning");
  CHECK_THAT(stuck[0].message, Catch::Contains("Deployment web has been in foreground deletion since "
                                               "2026-03-01T12:00:00Z"));
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK_FALSE(fixture.resource().metadata.has_finalizer(kFinalizer));
}

TEST_CASE("a canary stuck in foreground deletion is deleted again in background",
          "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","replicas":2})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  fixture.cluster->roll_out("web", 2);
  fixture.cluster->roll_out("web-canary", 1);
  fixture.cluster->garbage_collector_stuck = true;
  fixture.cluster->edit_myresource("web", [](Object& object) { object.erase_annotation("myorg.io/canary"); });
  fixture.reconcile();
  REQUIRE(fixture.cluster->deletes.size() == 1);
  CHECK(fixture.cluster->deletes[0].propagation == Propagation::foreground);

  ReconcileResult waiting = fixture.reconcile();
  REQUIRE(waiting.kind() == ReconcileResult::Kind::requeue_after);
  CHECK(waiting.delay() == seconds(90));
  CHECK(fixture.cluster->deletes.size() == 1);  // no DELETE again while it is being deleted

  fixture.clock->advance(seconds(90));
  fixture.reconcile();
  REQUIRE(fixture.cluster->deletes.size() == 2);
  CHECK(fixture.cluster->deletes[1].name == "web-canary");
  CHECK(fixture.cluster->deletes[1].propagation == Propagation::background);
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(events_of(*fixture.cluster, "ForegroundDeletionStuck").size() == 1);
  CHECK(fixture.cluster->deployments.count("web") == 1);
}

TEST_CASE("canary: the annotations of a v1beta1 object without spec.canary run the canary",
          "[myresource][reconciler][effective_canary]") {
  // What `kubectl annotate mr web myorg.io/canary=true myorg.io/targetVersion=1.1` writes: kubectl's
  // preferred version is v1beta1.
  Fixture fixture;
  store_v1beta1(fixture, R"({"image":"reg:5000/app:1.0","replicas":2})",
                R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  REQUIRE(fixture.cluster->deployments.count("web-canary") == 1);
  CHECK(fixture.condition("Canary").reason == "CanaryRunning");
  CHECK(fixture.resource().status.canary_image == "reg:5000/app:1.1");
  CHECK(events_of(*fixture.cluster, "AnnotationIgnored").empty());

  // Removing the annotation removes the canary, as in v1alpha1.
  fixture.cluster->edit_myresource("web", [](Object& object) { object.erase_annotation("myorg.io/canary"); });
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(find_condition(fixture.resource().status.conditions, "Canary") == nullptr);
}

TEST_CASE("canary: an annotation that spec.canary overrides is ignored, and an event says so",
          "[myresource][reconciler][effective_canary]") {
  Fixture fixture;
  store_v1beta1(fixture, R"({"image":"reg:5000/app:1.0","replicas":2,"canary":{"enabled":false}})",
                R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(fixture.cluster->deployments.count("web") == 1);
  const auto ignored = events_of(*fixture.cluster, "AnnotationIgnored");
  REQUIRE(ignored.size() == 1);
  CHECK(ignored[0].type == "Warning");
  CHECK_THAT(ignored[0].message, Catch::Contains("annotation myorg.io/canary \"true\" is ignored") &&
                                     Catch::Contains("spec.canary.enabled is false"));

  SECTION("the field set to what the annotation says: nothing is ignored any more") {
    fixture.cluster->events.clear();
    fixture.cluster->edit_myresource("web", [](Object& object) {
      object.set_member(object.json()["spec"]["canary"], "enabled", JsonValue(true));
    });
    fixture.reconcile();
    CHECK(fixture.cluster->deployments.count("web-canary") == 1);
    CHECK(events_of(*fixture.cluster, "AnnotationIgnored").empty());
  }
}

TEST_CASE("canary: abort after the deadline leaves stable untouched", "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","canary":{"progressDeadlineSeconds":60}})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  int stable_applies = fixture.cluster->deployment_applies - 1;  // one was the canary
  fixture.clock->advance(seconds(61));
  fixture.reconcile();
  CHECK(fixture.condition("Canary").reason == "CanaryFailed");
  CHECK(fixture.cluster->deployments.at("web-canary")->view().find({"spec", "replicas"})->GetInt() == 0);
  CHECK(fixture.cluster->deployment_applies == stable_applies + 2);  // the canary, scaled to 0
  CHECK(fixture.cluster->events.back().type == "Warning");
  CHECK(fixture.cluster->events.back().reason == "CanaryFailed");
}

TEST_CASE("canary: promotion when spec.image reaches the target", "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0"})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  fixture.set_spec_image("reg:5000/app:1.1");
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(fixture.condition("Canary").reason == "CanaryPromoted");
  CHECK(text_at(*fixture.cluster->deployments.at("web"), {"metadata", "name"}) == "web");
}

TEST_CASE("a MyResource gone from the cache needs nothing", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.cluster->myresources.clear();
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
  CHECK(fixture.cluster->writes() == 0);
}

TEST_CASE("feature flags: a canary switched off per object runs no canary", "[myresource][reconciler]") {
  Fixture fixture(
      R"({"image":"reg:5000/app:1.0"})",
      R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1","myorg.io/features":"canary=false,bogus=1"})");
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(fixture.condition("Canary").reason == "CanaryDisabled");
  bool reported = false;
  for (const auto& event : fixture.cluster->events) {
    reported = reported || (event.reason == "InvalidFeatureOverride" && event.type == "Warning");
  }
  CHECK(reported);

  // The operator-wide flag does the same for every object.
  Fixture global(R"({"image":"reg:5000/app:1.0"})",
                 R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  global.cluster->flags.canary = false;
  global.reconcile();
  CHECK(global.cluster->deployments.count("web-canary") == 0);
}

TEST_CASE("the status waits, boundedly, for the Deployment controller to observe a new spec",
          "[myresource][reconciler]") {
  Fixture fixture;
  fixture.cluster->generations = true;

  SECTION("the counts of a Deployment its controller has not seen yet are not written") {
    ReconcileResult result = fixture.reconcile();
    CHECK(fixture.cluster->deployment_applies == 1);
    CHECK(fixture.cluster->status_writes == 0);
    CHECK(result.kind() == ReconcileResult::Kind::requeue_after);
    CHECK(result.delay() == seconds(10));
    fixture.clock->advance(seconds(1));  // the Deployment's own echo: still not observed
    CHECK(fixture.reconcile().delay() == seconds(9));
    CHECK(fixture.cluster->status_writes == 0);

    fixture.cluster->roll_out("web", 0);  // observed, nothing available yet: a state to show
    CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
    CHECK(fixture.cluster->status_writes == 1);
    CHECK(fixture.condition("Ready").reason == "RollingOut");
    CHECK(fixture.resource().status.observed_generation == 1);

    fixture.cluster->roll_out("web", 2);
    fixture.reconcile();
    CHECK(fixture.condition("Ready").status == ConditionStatus::True);
    CHECK(fixture.cluster->status_writes == 2);

    fixture.set_spec_image("reg:5000/app:1.1");  // the Deployment moves to generation 2
    CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::requeue_after);
    CHECK(fixture.cluster->status_writes == 2);
    fixture.cluster->roll_out("web", 2);
    fixture.reconcile();
    CHECK(fixture.cluster->status_writes == 3);
    CHECK(fixture.resource().status.observed_generation == 2);
    CHECK(fixture.resource().status.image == "reg:5000/app:1.1");
  }

  SECTION("a stalled Deployment controller still gets an honest status after the wait") {
    fixture.reconcile();
    fixture.clock->advance(seconds(10));
    CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);
    CHECK(fixture.cluster->status_writes == 1);
    CHECK(fixture.condition("Ready").reason == "RollingOut");
    CHECK(fixture.condition("Ready").status == ConditionStatus::False);
  }
}

TEST_CASE("a 409 stays a typed conflict up to the controller", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.cluster->conflict_on_next_finalizer_write = true;
  ReconcileResult result = fixture.reconcile();
  REQUIRE(result.kind() == ReconcileResult::Kind::error);
  CHECK(result.is_conflict());
  REQUIRE(result.api_error());
  CHECK(result.api_error()->http_code == 409);
  CHECK(result.message().find("adding finalizer") != std::string::npos);
  CHECK(fixture.cluster->deployment_applies == 0);  // nothing else was attempted on a stale object

  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);  // the next look converges
}

TEST_CASE("a status write that fails during deletion fails the reconcile", "[myresource][reconciler]") {
  Fixture fixture;
  fixture.reconcile();
  fixture.begin_deletion();
  fixture.cluster->fail_status_writes =
      myop::kube::make_error(myop::kube::Reason::ServiceUnavailable, "the API server is restarting", 503);
  ReconcileResult result = fixture.reconcile();
  REQUIRE(result.kind() == ReconcileResult::Kind::error);
  CHECK_FALSE(result.is_conflict());
  CHECK(result.message().find("writing status") != std::string::npos);
  CHECK(fixture.resource().metadata.has_finalizer(kFinalizer));  // not dropped while children may remain

  fixture.cluster->deployments.clear();
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::done);  // no child left: no status needed
  CHECK_FALSE(fixture.resource().metadata.has_finalizer(kFinalizer));
}

namespace {

// The controller owner reference of the stored Deployment `name`, edited as an older release or
// someone else would have written it.
void set_owner_reference(FakeCluster& cluster, const std::string& name, const std::string& api_version,
                         const std::string& uid) {
  cluster.edit_deployment(name, [&](Object& deployment) {
    JsonValue& owner = deployment.json()["metadata"]["ownerReferences"][0];
    deployment.set_string_member(owner, "apiVersion", api_version);
    deployment.set_string_member(owner, "uid", uid);
  });
}

}  // namespace

TEST_CASE("Deployments whose ownerReference names myorg.io/v1alpha1 are ours and are not rewritten",
          "[myresource][reconciler]") {
  Fixture fixture(R"({"image":"reg:5000/app:1.0","replicas":2})",
                  R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1"})");
  fixture.reconcile();
  REQUIRE(fixture.cluster->deployments.size() == 2);
  CHECK(fixture.cluster->deployments.at("web")->view().controller_owner()->api_version == "myorg.io/v1beta1");
  fixture.cluster->roll_out("web", 2);
  fixture.cluster->roll_out("web-canary", 1);
  fixture.reconcile();
  // As the previous release wrote them: otherwise exactly the desired state.
  set_owner_reference(*fixture.cluster, "web", "myorg.io/v1alpha1", "mr-1");
  set_owner_reference(*fixture.cluster, "web-canary", "myorg.io/v1alpha1", "mr-1");
  const int writes = fixture.cluster->writes();
  fixture.reconcile();
  fixture.reconcile();
  CHECK(fixture.cluster->writes() == writes);
  CHECK(fixture.condition("Ready").status == ConditionStatus::True);
  CHECK(fixture.condition("Canary").reason == "CanaryRunning");

  // Still ours when it goes: the canary is removed with its v1alpha1 reference.
  fixture.cluster->edit_myresource("web", [](Object& object) { object.erase_annotation("myorg.io/canary"); });
  fixture.reconcile();
  CHECK(fixture.cluster->deployments.count("web-canary") == 0);
  CHECK(fixture.cluster->deployment_applies == 2);
}

TEST_CASE("a Deployment controlled by another uid is not ours, whatever the version",
          "[myresource][reconciler]") {
  const std::string version = GENERATE(as<std::string>{}, "myorg.io/v1alpha1", "myorg.io/v1beta1");
  CAPTURE(version);
  Fixture fixture;
  fixture.reconcile();
  set_owner_reference(*fixture.cluster, "web", version, "mr-0");
  const int applies = fixture.cluster->deployment_applies;
  CHECK(fixture.reconcile().kind() == ReconcileResult::Kind::error);
  CHECK(fixture.cluster->deployment_applies == applies);
  CHECK(fixture.condition("Degraded").reason == "ReconcileError");
  CHECK_THAT(fixture.condition("Degraded").message, Catch::Contains("not controlled by this MyResource"));
}

TEST_CASE("a v1beta1 MyResource runs as the same object written as v1alpha1 does",
          "[myresource][reconciler]") {
  Fixture alpha(
      R"({"image":"reg:5000/app:1.0","replicas":2})",
      R"({"myorg.io/canary":"true","myorg.io/targetVersion":"1.1","myorg.io/features":"orphanSweep=false,bogus=1"})");
  Fixture beta;
  beta.cluster->myresources.clear();
  beta.cluster->store_myresource(parse_json(
      R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":"web","namespace":"team-a",
          "uid":"mr-1","generation":1},"spec":{"image":"reg:5000/app:1.0","replicas":2,
          "canary":{"enabled":true,"targetVersion":"1.1"},"features":{"orphanSweep":false}}})"));
  for (Fixture* fixture : {&alpha, &beta}) {
    fixture->reconcile();
    fixture->cluster->roll_out("web", 2);
    fixture->cluster->roll_out("web-canary", 1);
    fixture->reconcile();
  }
  for (const std::string name : {"web", "web-canary"}) {
    CAPTURE(name);
    REQUIRE(alpha.cluster->deployments.count(name) == 1);
    REQUIRE(beta.cluster->deployments.count(name) == 1);
    const auto& from_alpha = *alpha.cluster->deployments.at(name);
    const auto& from_beta = *beta.cluster->deployments.at(name);
    CHECK(text_at(from_beta, {"metadata", "annotations", "myorg.io/spec-hash"}) ==
          text_at(from_alpha, {"metadata", "annotations", "myorg.io/spec-hash"}));
    const JsonValue& alpha_spec = *from_alpha.view().find({"spec"});
    const JsonValue& beta_spec = *from_beta.view().find({"spec"});
    CHECK(owned_fields_match(alpha_spec, beta_spec));
    CHECK(owned_fields_match(beta_spec, alpha_spec));
    CHECK(from_alpha.view().annotations() == from_beta.view().annotations());
    CHECK(from_alpha.view().labels() == from_beta.view().labels());
  }
  CHECK(alpha.cluster->deployment_applies == beta.cluster->deployment_applies);
  CHECK(alpha.condition("Canary") == beta.condition("Canary"));
  CHECK(alpha.condition("Ready") == beta.condition("Ready"));
  // The bad entry of the v1alpha1 text is reported; v1beta1 cannot hold one.
  auto reasons = [](const FakeCluster& cluster) {
    std::vector<std::string> list;
    for (const auto& event : cluster.events) list.push_back(event.reason);
    return list;
  };
  std::vector<std::string> alpha_reasons = reasons(*alpha.cluster);
  std::erase(alpha_reasons, "InvalidFeatureOverride");
  CHECK(alpha_reasons == reasons(*beta.cluster));
  CHECK(alpha_reasons.size() < alpha.cluster->events.size());
}
