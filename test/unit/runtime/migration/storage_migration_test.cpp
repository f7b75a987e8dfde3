// The migrator against an API server modelled in memory: each object's stored version and
// resourceVersion, the CRD's storage version, resourceVersion and storedVersions, merge patches with
// a resourceVersion precondition. The property every case ends on: once storedVersions is trimmed,
// every object is stored in the storage version.
#include "runtime/migration/storage_migration.h"

#include <rapidjson/document.h>
#include <catch2/catch.hpp>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kube/object.h"
#include "runtime/logging.h"
#include "support/fake_clock.h"
#include "support/metrics_reader.h"

using namespace myop;
using namespace myop::runtime;

namespace {

const std::string kCrdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/myresources.myorg.io";
const std::string kObjectsPrefix = "/apis/myorg.io/v1beta1/namespaces/team-a/myresources/";

kube::Response status(int code, const std::string& reason, const std::string& message) {
  return {code,
          R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)" + json_quote(message) +
              R"(,"reason":")" + reason + R"(","code":)" + std::to_string(code) + "}",
          "application/json"};
}

class FakeApiServer final : public kube::Transport {
 public:
  struct Stored {
    std::string version;  // the encoding etcd holds
    std::string resource_version;
  };

  explicit FakeApiServer(int objects) {
    for (int i = 0; i < objects; ++i) objects_["app-" + std::to_string(i)] = {"v1alpha1", next_revision()};
    crd_resource_version_ = next_revision();
  }

  kube::Result<kube::Response> send(const kube::Request& request, std::stop_token) override {
    kube::Response response;
    std::function<void(const kube::Request&)> hook;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request.method + " " + request.path);
      response = answer(request);
      hook = after_;
    }
    if (hook) hook(request);
    return response;
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler&, std::stop_token,
                                       const kube::StreamOptions&) override {
    return kube::make_error(kube::Reason::Unknown, "no streams here");
  }
  const std::string& host() const override { return host_; }

  // Called after each answer, outside the server's lock (it may change the server).
  void after_each(std::function<void(const kube::Request&)> hook) {
    std::lock_guard lock(mutex_);
    after_ = std::move(hook);
  }
  // The next answers to patches of `name`, before the model's own.
  void script(const std::string& name, kube::Response response) {
    std::lock_guard lock(mutex_);
    scripted_[name].push_back(std::move(response));
  }
  // Admission refuses every update of `name` (until unrefuse).
  void refuse(const std::string& name) {
    std::lock_guard lock(mutex_);
    refused_[name] = true;
  }
  void unrefuse(const std::string& name) {
    std::lock_guard lock(mutex_);
    refused_.erase(name);
  }
  // A write of the CRD's spec (a caBundle, the storage flag): a new resourceVersion; a new storage
  // version is added to storedVersions, as the API server does.
  void change_crd(const std::string& storage_version) {
    std::lock_guard lock(mutex_);
    storage_version_ = storage_version;
    if (std::find(stored_versions_.begin(), stored_versions_.end(), storage_version) ==
        stored_versions_.end())
      stored_versions_.push_back(storage_version);
    crd_resource_version_ = next_revision();
  }
  // Someone else's write of an object: stored in the storage version of the moment.
  void write_object(const std::string& name) {
    std::lock_guard lock(mutex_);
    objects_[name] = {storage_version_, next_revision()};
  }

  std::map<std::string, Stored> objects() {
    std::lock_guard lock(mutex_);
    return objects_;
  }
  std::vector<std::string> stored_versions() {
    std::lock_guard lock(mutex_);
    return stored_versions_;
  }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  // Names of the objects patched, in order.
  std::vector<std::string> patched() {
    std::vector<std::string> names;
    const std::string prefix = "PATCH " + kObjectsPrefix;
    for (const auto& request : requests())
      if (request.rfind(prefix, 0) == 0) names.push_back(request.substr(prefix.size()));
    return names;
  }
  std::size_t count(const std::string& method_and_path_prefix) {
    std::size_t n = 0;
    for (const auto& request : requests()) n += request.rfind(method_and_path_prefix, 0) == 0;
    return n;
  }
  std::vector<std::string> trim_preconditions() {
    std::lock_guard lock(mutex_);
    return trim_preconditions_;
  }

 private:
  std::string next_revision() { return std::to_string(++revision_); }

  std::string crd_json() const {
    std::string versions;
    for (const std::string version : {"v1alpha1", "v1beta1"})
      versions += std::string(versions.empty() ? "" : ",") + R"({"name":")" + version +
                  R"(","served":true,"storage":)" + (version == storage_version_ ? "true" : "false") + "}";
    std::string stored;
    for (const auto& version : stored_versions_) stored += (stored.empty() ? "" : ",") + json_quote(version);
    return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)"
           R"("metadata":{"name":"myresources.myorg.io","resourceVersion":")" +
           crd_resource_version_ +
           R"("},"spec":{"group":"myorg.io","scope":"Namespaced","names":{"plural":"myresources",)"
           R"("kind":"MyResource"},"versions":[)" +
           versions + R"(]},"status":{"storedVersions":[)" + stored + "]}}";
  }

  std::string object_json(const std::string& name, const Stored& stored) const {
    return R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":")" + name +
           R"(","namespace":"team-a","uid":"uid-)" + name + R"(","resourceVersion":")" +
           stored.resource_version + R"("},"spec":{"image":"nginx:1.27.1"}})";
  }

  kube::Response answer(const kube::Request& request) {
    if (request.method == "GET" && request.path == kCrdPath) return {200, crd_json(), "application/json"};
    if (request.method == "POST" && request.path.find("/events") != std::string::npos)
      return {201, request.body, "application/json"};
    if (request.method == "GET" && request.path == "/apis/myorg.io/v1beta1/myresources") {
      std::string items;
      for (const auto& [name, stored] : objects_)
        items += (items.empty() ? "" : ",") + object_json(name, stored);
      return {200,
              R"({"kind":"MyResourceList","apiVersion":"myorg.io/v1beta1","metadata":{"resourceVersion":")" +
                  std::to_string(revision_) + R"("},"items":[)" + items + "]}",
              "application/json"};
    }
    rapidjson::Document body;
    body.Parse(request.body.c_str());
    const std::string precondition =
        body.HasParseError() ? "" : kube::string_at(body, {"metadata", "resourceVersion"});
    if (request.method == "PATCH" && request.path == kCrdPath + "/status") {
      trim_preconditions_.push_back(precondition);
      if (precondition != crd_resource_version_)
        return status(409, "Conflict",
                      "Operation cannot be fulfilled on customresourcedefinitions: modified");
      stored_versions_.clear();
      for (const auto& version : body["status"]["storedVersions"].GetArray())
        stored_versions_.emplace_back(version.GetString());
      crd_resource_version_ = next_revision();
      return {200, crd_json(), "application/json"};
    }
    if (request.method == "PATCH" && request.path.rfind(kObjectsPrefix, 0) == 0) {
      const std::string name = request.path.substr(kObjectsPrefix.size());
      if (auto script = scripted_.find(name); script != scripted_.end() && !script->second.empty()) {
        auto response = script->second.front();
        script->second.pop_front();
        return response;
      }
      const auto object = objects_.find(name);
      if (object == objects_.end())
        return status(404, "NotFound", "myresources.myorg.io \"" + name + "\" not found");
      if (precondition != object->second.resource_version)
        return status(409, "Conflict",
                      "Operation cannot be fulfilled on myresources.myorg.io \"" + name + "\"");
      if (refused_.count(name) != 0)
        return status(403, "Forbidden",
                      "myresources.myorg.io \"" + name +
                          "\" is forbidden: ValidatingAdmissionPolicy 'limits' with binding 'limits' denied "
                          "request: every container must set limits");
      // Stored again only when the encoding differs, as the API server compares the bytes.
      if (object->second.version != storage_version_) object->second = {storage_version_, next_revision()};
      return {200, object_json(name, object->second), "application/json"};
    }
    return status(404, "NotFound", "no such path in the fake: " + request.method + " " + request.path);
  }

  std::mutex mutex_;
  long revision_ = 0;
  std::map<std::string, Stored> objects_;
  std::string storage_version_ = "v1beta1";
  std::vector<std::string> stored_versions_{"v1alpha1", "v1beta1"};
  std::string crd_resource_version_;
  std::map<std::string, std::deque<kube::Response>> scripted_;
  std::map<std::string, bool> refused_;
  std::vector<std::string> requests_;
  std::vector<std::string> trim_preconditions_;
  std::function<void(const kube::Request&)> after_;
  std::string host_ = "test:443";
};

struct Fixture {
  explicit Fixture(int objects) : server(std::make_shared<FakeApiServer>(objects)) {}

  StorageVersionMigratorOptions options() {
    StorageVersionMigratorOptions result;
    result.client = std::make_shared<kube::Client>(server, "test");
    result.crd_name = "myresources.myorg.io";
    result.field_manager = "test-migration";
    result.qps = 0;  // no rate limit
    result.registry = registry;
    result.metrics_prefix = "test_migration";
    return result;
  }

  double metric(const std::string& name, const std::string& label, const std::string& value) {
    return runtime::testing::metric_value(*registry, name, {{label, value}}).value_or(-1);
  }

  // Every object stored in `version`.
  bool all_stored_in(const std::string& version) {
    for (const auto& [name, stored] : server->objects())
      if (stored.version != version) return false;
    return true;
  }

  std::shared_ptr<FakeApiServer> server;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
};

std::map<std::string, int> counts(const std::vector<std::string>& names) {
  std::map<std::string, int> result;
  for (const auto& name : names) ++result[name];
  return result;
}

}  // namespace

TEST_CASE("storage migrator: one pass rewrites every object once and trims under the CRD read before it",
          "[storage-migration]") {
  Fixture fixture(5);
  StorageVersionMigrator migrator(fixture.options());
  const auto report = migrator.migrate();
  INFO(result_name(report.result));
  CHECK(report.result == MigrationResult::trimmed);
  CHECK(report.listed == 5);
  CHECK(report.rewritten == 5);
  CHECK(report.trimmed_from == std::vector<std::string>{"v1alpha1", "v1beta1"});
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1beta1"});
  CHECK(fixture.all_stored_in("v1beta1"));
  CHECK(counts(fixture.server->patched()).size() == 5);
  for (const auto& [name, times] : counts(fixture.server->patched())) CHECK(times == 1);
  CHECK(fixture.metric("test_migration_objects_total", "result", "rewritten") == 5);
  CHECK(fixture.metric("test_migration_objects_remaining", "state", "pending") == 0);

  // Nothing left to do: the next call reads the CRD and writes nothing.
  const auto before = fixture.server->requests().size();
  CHECK(migrator.migrate().result == MigrationResult::not_needed);
  CHECK(fixture.server->requests().size() == before + 1);
}

TEST_CASE("storage migrator: a refused object is skipped and reported, the trim waits until it is written",
          "[storage-migration]") {
  Fixture fixture(5);
  fixture.server->refuse("app-2");
  auto options = fixture.options();
  EventRecorderOptions event_options;
  event_options.reporting_controller = "example.com/test";
  event_options.reporting_instance = "test";
  options.events = std::make_shared<EventRecorder>(options.client, event_options);
  StorageVersionMigrator migrator(options);

  auto report = migrator.migrate();
  CHECK(report.result == MigrationResult::refused);
  CHECK(report.rewritten == 4);
  CHECK(report.refused == 1);
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1alpha1", "v1beta1"});
  CHECK(fixture.server->trim_preconditions().empty());
  CHECK(fixture.metric("test_migration_objects_total", "result", "refused") == 1);
  CHECK(fixture.metric("test_migration_objects_remaining", "state", "refused") == 1);
  options.events->flush();
  CHECK(fixture.server->count("POST /apis/events.k8s.io/v1/namespaces/team-a/events") == 1);

  // The next pass writes the refused object alone (the CRD unchanged vouches for the others).
  report = migrator.migrate();
  CHECK(report.result == MigrationResult::refused);
  CHECK(report.listed == 0);
  CHECK(fixture.server->patched().size() == 6);
  CHECK(fixture.server->patched().back() == "app-2");
  CHECK(fixture.metric("test_migration_objects_total", "result", "refused") == 2);

  // Its owner fixes it (a write that admission accepts, stored in v1beta1): the next pass's write gets a
  // 409, and the trim goes through, under the CRD's resourceVersion read before the first pass.
  fixture.server->unrefuse("app-2");
  fixture.server->write_object("app-2");
  report = migrator.migrate();
  CHECK(report.result == MigrationResult::trimmed);
  CHECK(report.written_meanwhile == 1);
  CHECK(fixture.server->patched().size() == 7);
  CHECK(fixture.server->trim_preconditions().size() == 1);
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1beta1"});
  CHECK(fixture.all_stored_in("v1beta1"));
  CHECK(fixture.metric("test_migration_objects_remaining", "state", "refused") == 0);
  CHECK(fixture.server->count("GET /apis/myorg.io/v1beta1/myresources") ==
        1);  // one list for the three passes
}

TEST_CASE("storage migrator: a failure stops the pass, the next call resumes where it stopped",
          "[storage-migration]") {
  Fixture fixture(5);
  fixture.server->script("app-2", status(503, "ServiceUnavailable", "the server is shutting down"));
  StorageVersionMigrator migrator(fixture.options());
  auto report = migrator.migrate();
  CHECK(report.result == MigrationResult::interrupted);
  REQUIRE(report.error);
  CHECK_THAT(report.error->message, Catch::Contains("team-a/app-2"));
  CHECK(fixture.server->patched() == std::vector<std::string>{"app-0", "app-1", "app-2"});

  report = migrator.migrate();
  CHECK(report.result == MigrationResult::trimmed);
  CHECK(report.listed == 0);  // resumed, not listed again
  CHECK(fixture.server->patched() ==
        std::vector<std::string>{"app-0", "app-1", "app-2", "app-2", "app-3", "app-4"});
  CHECK(fixture.all_stored_in("v1beta1"));
}

TEST_CASE("storage migrator: a storage version that flips and flips back during a pass is never trimmed over",
          "[storage-migration]") {
  Fixture fixture(5);
  auto options = fixture.options();
  SECTION("the flip between two writes: the check before the trim sees it, a new pass rewrites") {
    int patches = 0;
    fixture.server->after_each([&](const kube::Request& request) {
      if (request.method != "PATCH" || request.path.rfind(kObjectsPrefix, 0) != 0 || ++patches != 2) return;
      // A flip, a user's write of app-2 stored as v1alpha1, a flip back: the storage version the
      // migrator reads next is the one it began with.
      fixture.server->change_crd("v1alpha1");
      fixture.server->write_object("app-2");
      fixture.server->change_crd("v1beta1");
    });
    StorageVersionMigrator migrator(options);
    auto report = migrator.migrate();
    CHECK(report.result == MigrationResult::crd_changed);
    CHECK(report.written_meanwhile == 1);  // app-2's write got a 409
    CHECK(fixture.server->trim_preconditions().empty());
    CHECK(fixture.server->objects().at("app-2").version == "v1alpha1");
    report = migrator.migrate();
    CHECK(report.result == MigrationResult::trimmed);
    CHECK(fixture.all_stored_in("v1beta1"));
  }
  SECTION("the flip between the check and the trim: the trim's precondition fails it") {
    int crd_reads = 0;
    fixture.server->after_each([&](const kube::Request& request) {
      if (request.method != "GET" || request.path != kCrdPath || ++crd_reads != 2) return;
      // After the check before the trim: a flip, a user's write stored as v1alpha1, a flip back.
      fixture.server->change_crd("v1alpha1");
      fixture.server->write_object("app-0");
      fixture.server->change_crd("v1beta1");
    });
    StorageVersionMigrator migrator(options);
    auto report = migrator.migrate();
    CHECK(report.result == MigrationResult::crd_changed);
    REQUIRE(fixture.server->trim_preconditions().size() == 1);
    CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1alpha1", "v1beta1"});
    CHECK(fixture.server->objects().at("app-0").version == "v1alpha1");

    // The new pass writes only app-0, the one object written since its confirmed rewrite.
    report = migrator.migrate();
    CHECK(report.result == MigrationResult::trimmed);
    CHECK(report.listed == 5);
    CHECK(report.skipped == 4);
    CHECK(fixture.server->patched().size() == 6);
    CHECK(fixture.server->patched().back() == "app-0");
    CHECK(fixture.all_stored_in("v1beta1"));
  }
}

TEST_CASE("storage migrator: a CRD that changes during a pass costs one short pass, not a rewrite of all",
          "[storage-migration]") {
  Fixture fixture(10);
  auto options = fixture.options();
  options.confirm_every = 3;
  int patches = 0;
  fixture.server->after_each([&](const kube::Request& request) {
    if (request.method == "PATCH" && request.path.rfind(kObjectsPrefix, 0) == 0 && ++patches == 7)
      fixture.server->change_crd("v1beta1");  // the operator's own caBundle rotation
  });
  StorageVersionMigrator migrator(options);
  auto report = migrator.migrate();
  CHECK(report.result == MigrationResult::crd_changed);
  // The CRD is read after every third write: unchanged after the 3rd and the 6th, changed (at the 7th)
  // after the 9th.
  CHECK(fixture.server->patched().size() == 9);
  report = migrator.migrate();
  CHECK(report.result == MigrationResult::trimmed);
  CHECK(report.skipped == 6);  // confirmed by the check after the 6th write
  CHECK(fixture.server->patched().size() == 9 + 4);
  CHECK(fixture.all_stored_in("v1beta1"));
}

TEST_CASE(
    "storage migrator: under sharding only the owner of slot 0 migrates, and stops before its next write",
    "[storage-migration]") {
  Fixture fixture(5);
  auto gate = std::make_shared<ShardGate>();
  auto options = fixture.options();
  options.write_permit = shard_slot_permit(gate, 0);
  StorageVersionMigrator migrator(options);

  // Slot 0 not ours: nothing is read, nothing written.
  CHECK(migrator.migrate().result == MigrationResult::not_the_migrator);
  CHECK(fixture.server->requests().empty());

  gate->extend_deadline(base::system_clock()->now() + std::chrono::hours(1));
  gate->activate(0);
  fixture.server->after_each([&](const kube::Request& request) {
    // While the second write is in flight, its ticket is held.
    if (request.method == "PATCH" && request.path == kObjectsPrefix + "app-1") {
      CHECK(gate->in_flight(0) == 1);
      gate->close();  // membership lost: no ticket any more
    }
  });
  CHECK(migrator.migrate().result == MigrationResult::not_the_migrator);
  CHECK(fixture.server->patched() == std::vector<std::string>{"app-0", "app-1"});
  CHECK(gate->in_flight(0) == 0);
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1alpha1", "v1beta1"});
}

TEST_CASE(
    "storage migrator, started: a pass at once, refused objects again every retry_interval, a check "
    "every check_interval, on the clock",
    "[storage-migration]") {
  Fixture fixture(3);
  fixture.server->refuse("app-1");
  auto clock = std::make_shared<myop::testing::FakeClock>();
  auto options = fixture.options();
  options.check_interval = std::chrono::minutes(10);
  options.retry_interval = std::chrono::seconds(30);
  options.clock = clock;
  StorageVersionMigrator migrator(options);
  const auto start = clock->now();
  migrator.start();
  // The first pass: app-1 refused, so the next pass after retry_interval.
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30)));
  CHECK(counts(fixture.server->patched()) ==
        std::map<std::string, int>{{"app-0", 1}, {"app-1", 1}, {"app-2", 1}});
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1alpha1", "v1beta1"});
  fixture.server->unrefuse("app-1");
  clock->advance(std::chrono::seconds(30));
  // The second writes app-1 only and trims; the next check after check_interval.
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30) + std::chrono::minutes(10)));
  CHECK(counts(fixture.server->patched()) ==
        std::map<std::string, int>{{"app-0", 1}, {"app-1", 2}, {"app-2", 1}});
  CHECK(fixture.server->stored_versions() == std::vector<std::string>{"v1beta1"});
  const auto requests = fixture.server->requests().size();
  clock->advance(std::chrono::minutes(10));
  // Nothing to do: one read of the CRD, and the next check a period later.
  REQUIRE(clock->await_deadline(start + std::chrono::seconds(30) + std::chrono::minutes(20)));
  CHECK(fixture.server->requests().size() == requests + 1);
  migrator.stop();
  CHECK(clock->waiters() == 0);
}
