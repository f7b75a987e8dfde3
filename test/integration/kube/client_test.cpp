// The REST client against the real API server: CRUD, preconditions, patches, server-side apply,
// pagination, custom resources with a status subresource, discovery and the raw watch stream.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "kube/client.h"
#include "kube_test_support.h"

using namespace myop::kube;
using namespace myop::kube::testing;
using namespace std::chrono_literals;

namespace {

rapidjson::Document config_map(const std::string& name, const std::string& data_json = R"({"a":"1"})") {
  return parse_json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":)" +
                    data_json + "}");
}

// A cluster-scoped CRD shared by the tests of this file; created once, idempotently.
const ResourceType kWidgets{"kubetest.myorg.io", "v1", "widgets", true, "Widget"};

void ensure_widget_crd(Client& client) {
  auto crd = parse_json(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.kubetest.myorg.io"},
    "spec": {"group": "kubetest.myorg.io", "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
      "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})");
  auto created = client.create(resources::custom_resource_definitions(), "", crd);
  if (!created) REQUIRE(is_already_exists(created.error()));
  auto established = client.wait_for_crd_established("widgets.kubetest.myorg.io", 60s);
  INFO((established ? std::string() : established.error().to_string()));
  REQUIRE(established.ok());
}

}  // namespace

TEST_CASE("ConfigMap create, get, update, patch in three flavours, delete", "[integration][kube][client]") {
  myop::testenv::ScopedNamespace ns("kube-crud");
  Client client = admin_client();
  const auto type = resources::config_maps();

  auto created = client.create(type, ns.name(), config_map("settings"));
  INFO((created ? std::string() : created.error().to_string()));
  REQUIRE(created.ok());
  CHECK(string_at(created.value(), {"metadata", "namespace"}) == ns.name());
  CHECK_FALSE(string_at(created.value(), {"metadata", "resourceVersion"}).empty());

  auto again = client.create(type, ns.name(), config_map("settings"));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().reason == Reason::AlreadyExists);

  auto fetched = client.get(type, ns.name(), "settings");
  REQUIRE(fetched.ok());
  CHECK(string_at(fetched.value(), {"data", "a"}) == "1");

  // Update with the resourceVersion just read.
  fetched.value()["data"]["a"].SetString("2", fetched.value().GetAllocator());
  auto updated = client.update(type, ns.name(), fetched.value());
  INFO((updated ? std::string() : updated.error().to_string()));
  REQUIRE(updated.ok());
  CHECK(string_at(updated.value(), {"data", "a"}) == "2");

  auto merged = client.patch(type, ns.name(), "settings", PatchType::Merge, R"({"data":{"b":"merge"}})");
  REQUIRE(merged.ok());
  CHECK(string_at(merged.value(), {"data", "b"}) == "merge");
  auto json_patched = client.patch(type, ns.name(), "settings", PatchType::Json,
                                   R"([{"op":"replace","path":"/data/a","value":"json"}])");
  REQUIRE(json_patched.ok());
  CHECK(string_at(json_patched.value(), {"data", "a"}) == "json");
  auto strategic = client.patch(type, ns.name(), "settings", PatchType::StrategicMerge,
                                R"({"metadata":{"labels":{"tier":"strategic"}}})");
  REQUIRE(strategic.ok());
  CHECK(string_at(strategic.value(), {"metadata", "labels", "tier"}) == "strategic");

  auto removed = client.remove(type, ns.name(), "settings");
  INFO((removed ? std::string() : removed.error().to_string()));
  REQUIRE(removed.ok());
  auto gone = client.get(type, ns.name(), "settings");
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().reason == Reason::NotFound);
  CHECK(gone.error().http_code == 404);
  auto remove_again = client.remove(type, ns.name(), "settings");
  REQUIRE_FALSE(remove_again.ok());
  CHECK(is_not_found(remove_again.error()));
}

TEST_CASE("an update with a stale resourceVersion gets 409 Conflict", "[integration][kube][client]") {
  myop::testenv::ScopedNamespace ns("kube-conflict");
  Client client = admin_client();
  const auto type = resources::config_maps();
  REQUIRE(client.create(type, ns.name(), config_map("contended")).ok());
  auto first_reader = client.get(type, ns.name(), "contended");
  auto second_reader = client.get(type, ns.name(), "contended");
  REQUIRE(first_reader.ok());
  REQUIRE(second_reader.ok());

  first_reader.value()["data"]["a"].SetString("first", first_reader.value().GetAllocator());
  REQUIRE(client.update(type, ns.name(), first_reader.value()).ok());

  second_reader.value()["data"]["a"].SetString("second", second_reader.value().GetAllocator());
  auto stale = client.update(type, ns.name(), second_reader.value());
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().reason == Reason::Conflict);
  CHECK(stale.error().http_code == 409);
  CHECK(stale.error().message.find("the object has been modified") != std::string::npos);
  CHECK(string_at(client.get(type, ns.name(), "contended").value(), {"data", "a"}) == "first");
}

TEST_CASE("delete preconditions on uid and resourceVersion are enforced", "[integration][kube][client]") {
  myop::testenv::ScopedNamespace ns("kube-delete");
  Client client = admin_client();
  const auto type = resources::config_maps();
  auto created = client.create(type, ns.name(), config_map("guarded"));
  REQUIRE(created.ok());
  const std::string uid = string_at(created.value(), {"metadata", "uid"});
  const std::string version = string_at(created.value(), {"metadata", "resourceVersion"});

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  auto refused = client.remove(type, ns.name(), "guarded", wrong_uid);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().reason == Reason::Conflict);

  REQUIRE(client.patch(type, ns.name(), "guarded", PatchType::Merge, R"({"data":{"x":"y"}})").ok());
  DeleteOptions stale_version;
  stale_version.precondition_resource_version = version;
  auto stale = client.remove(type, ns.name(), "guarded", stale_version);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().reason == Reason::Conflict);

  DeleteOptions right;
  right.precondition_uid = uid;
  right.propagation_policy = "Foreground";
  auto removed = client.remove(type, ns.name(), "guarded", right);
  INFO((removed ? std::string() : removed.error().to_string()));
  CHECK(removed.ok());
}

TEST_CASE("server-side apply records the field manager and reports conflicts",
          "[integration][kube][client]") {
  myop::testenv::ScopedNamespace ns("kube-apply");
  Client client = admin_client();
  const auto type = resources::config_maps();
  auto desired = config_map("applied", R"({"owned":"by-a"})");

  PatchOptions manager_a;
  manager_a.field_manager = "manager-a";
  auto applied = client.apply(type, ns.name(), desired, manager_a);
  INFO((applied ? std::string() : applied.error().to_string()));
  REQUIRE(applied.ok());
  CHECK(string_at(applied.value(), {"data", "owned"}) == "by-a");
  const auto& managed = applied.value()["metadata"]["managedFields"];
  REQUIRE(managed.IsArray());
  bool found_manager = false;
  for (const auto& entry : managed.GetArray())
    found_manager |=
        string_at(entry, {"manager"}) == "manager-a" && string_at(entry, {"operation"}) == "Apply";
  CHECK(found_manager);

  // Applying the same again changes nothing (idempotent).
  auto repeated = client.apply(type, ns.name(), desired, manager_a);
  REQUIRE(repeated.ok());
  CHECK(string_at(repeated.value(), {"metadata", "resourceVersion"}) ==
        string_at(applied.value(), {"metadata", "resourceVersion"}));

  PatchOptions manager_b;
  manager_b.field_manager = "manager-b";
  auto contested = config_map("applied", R"({"owned":"by-b"})");
  auto conflict = client.apply(type, ns.name(), contested, manager_b);
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.error().reason == Reason::Conflict);
  REQUIRE_FALSE(conflict.error().causes.empty());
  CHECK(conflict.error().causes[0].type == "FieldManagerConflict");
  CHECK(conflict.error().causes[0].field.find("data.owned") != std::string::npos);
  CHECK(conflict.error().message.find("manager-a") != std::string::npos);

  manager_b.force = true;
  auto forced = client.apply(type, ns.name(), contested, manager_b);
  REQUIRE(forced.ok());
  CHECK(string_at(forced.value(), {"data", "owned"}) == "by-b");
}

TEST_CASE("list pages through more objects than the limit", "[integration][kube][client]") {
  myop::testenv::ScopedNamespace ns("kube-pages");
  Client client = admin_client();
  const auto type = resources::config_maps();
  constexpr int kObjects = 23;
  for (int i = 0; i < kObjects; ++i) {
    auto object = config_map("page-" + std::to_string(i));
    // Copied into the object's allocator: the parsed temporary (and its strings) dies at the semicolon.
    const auto labels = parse_json(R"({"paged":"yes"})");
    object["metadata"].AddMember("labels", rapidjson::Value(labels, object.GetAllocator()),
                                 object.GetAllocator());
    auto created = client.create(type, ns.name(), object);
    INFO((created ? std::string() : created.error().to_string()));
    REQUIRE(created.ok());
  }
  REQUIRE(client.create(type, ns.name(), config_map("unlabelled")).ok());

  ListOptions options;
  options.limit = 5;
  options.label_selector = "paged=yes";
  auto first_page = client.list(type, ns.name(), options);
  REQUIRE(first_page.ok());
  CHECK(first_page.value()["items"].Size() == 5);
  CHECK_FALSE(string_at(first_page.value(), {"metadata", "continue"}).empty());

  int pages = 0;
  int seen = 0;
  std::string continue_token;
  do {
    options.continue_token = continue_token;
    auto page = client.list(type, ns.name(), options);
    REQUIRE(page.ok());
    ++pages;
    seen += static_cast<int>(page.value()["items"].Size());
    continue_token = string_at(page.value(), {"metadata", "continue"});
  } while (!continue_token.empty());
  CHECK(seen == kObjects);
  CHECK(pages == 5);

  options.continue_token.clear();
  auto everything = client.list_all(type, ns.name(), options);
  REQUIRE(everything.ok());
  CHECK(everything.value()["items"].Size() == kObjects);
  CHECK(string_at(everything.value(), {"metadata", "continue"}).empty());

  ListOptions by_field;
  by_field.field_selector = "metadata.name=page-7";
  auto one = client.list(type, ns.name(), by_field);
  REQUIRE(one.ok());
  REQUIRE(one.value()["items"].Size() == 1);

  ListOptions from_cache;
  from_cache.resource_version = "0";
  from_cache.label_selector = "paged=yes";
  auto cached = client.list(type, ns.name(), from_cache);
  REQUIRE(cached.ok());
  CHECK(cached.value()["items"].Size() == kObjects);
}

TEST_CASE("a custom resource: CRD discovery, CRUD and the status subresource",
          "[integration][kube][client]") {
  Client client = admin_client();
  ensure_widget_crd(client);
  myop::testenv::ScopedNamespace ns("kube-cr");

  auto discovered = client.resource_for_kind("kubetest.myorg.io", "v1", "Widget");
  REQUIRE(discovered.ok());
  CHECK(discovered->resource == "widgets");
  CHECK(discovered->namespaced);

  auto widget = parse_json(R"({"apiVersion":"kubetest.myorg.io/v1","kind":"Widget","metadata":{"name":"w"},
                               "spec":{"size":3},"status":{"phase":"ignored-on-create"}})");
  auto created = client.create(kWidgets, ns.name(), widget);
  INFO((created ? std::string() : created.error().to_string()));
  REQUIRE(created.ok());
  CHECK_FALSE(created.value().HasMember("status"));  // status is only written through /status

  auto invalid = parse_json(R"({"apiVersion":"kubetest.myorg.io/v1","kind":"Widget","metadata":{"name":"bad"},
                                "spec":{"size":-1}})");
  auto refused = client.create(kWidgets, ns.name(), invalid);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().reason == Reason::Invalid);
  REQUIRE_FALSE(refused.error().causes.empty());
  CHECK(refused.error().causes[0].field == "spec.size");

  auto current = client.get(kWidgets, ns.name(), "w");
  REQUIRE(current.ok());
  auto& document = current.value();
  const auto status = parse_json(R"({"phase":"Ready"})");
  document.AddMember("status", rapidjson::Value(status, document.GetAllocator()), document.GetAllocator());
  document["spec"]["size"].SetInt(99);  // ignored by /status
  auto status_written = client.update_status(kWidgets, ns.name(), document);
  INFO((status_written ? std::string() : status_written.error().to_string()));
  REQUIRE(status_written.ok());
  CHECK(string_at(status_written.value(), {"status", "phase"}) == "Ready");
  CHECK(status_written.value()["spec"]["size"].GetInt() == 3);

  auto status_patched = client.patch(kWidgets, ns.name(), "w", PatchType::Merge,
                                     R"({"status":{"phase":"Done"}})", {}, "status");
  REQUIRE(status_patched.ok());
  CHECK(string_at(status_patched.value(), {"status", "phase"}) == "Done");

  // The merge patch above made the client's manager own .status.phase, so applying it as another
  // manager conflicts until forced.
  PatchOptions apply_options;
  apply_options.field_manager = "status-owner";
  const auto status_object = parse_json(
      R"({"apiVersion":"kubetest.myorg.io/v1","kind":"Widget","metadata":{"name":"w"},"status":{"phase":"Applied"}})");
  auto status_conflict = client.apply(kWidgets, ns.name(), status_object, apply_options, "status");
  REQUIRE_FALSE(status_conflict.ok());
  CHECK(status_conflict.error().reason == Reason::Conflict);
  CHECK(status_conflict.error().message.find("force") != std::string::npos);
  apply_options.force = true;
  auto status_applied = client.apply(kWidgets, ns.name(), status_object, apply_options, "status");
  INFO((status_applied ? std::string() : status_applied.error().to_string()));
  REQUIRE(status_applied.ok());
  CHECK(string_at(status_applied.value(), {"status", "phase"}) == "Applied");

  auto spec_patched = client.patch(kWidgets, ns.name(), "w", PatchType::Merge, R"({"spec":{"size":5}})");
  REQUIRE(spec_patched.ok());
  CHECK(spec_patched.value()["spec"]["size"].GetInt() == 5);
  CHECK(spec_patched.value()["metadata"]["generation"].GetInt() == 2);

  auto listed = client.list(kWidgets, ns.name());
  REQUIRE(listed.ok());
  CHECK(listed.value()["items"].Size() == 1);
  REQUIRE(client.remove(kWidgets, ns.name(), "w").ok());
}

TEST_CASE("waiting for a CRD that does not exist times out with a reason", "[integration][kube][client]") {
  Client client = admin_client();
  auto waited = client.wait_for_crd_established("nothings.nowhere.myorg.io", 1500ms);
  REQUIRE_FALSE(waited.ok());
  CHECK(waited.error().reason == Reason::Timeout);
  CHECK(waited.error().message.find("does not exist") != std::string::npos);
}

TEST_CASE("the raw watch stream delivers events as chunks and stops on request",
          "[integration][kube][client][stream]") {
  myop::testenv::ScopedNamespace ns("kube-stream");
  // The body as JSON lines (a default client asks for protobuf for ConfigMaps: kube/protobuf.h).
  Client client(transport_for(admin_config()), "myop-integration", ClientOptions{WireFormat::Json});
  const auto type = resources::config_maps();
  auto listed = client.list(type, ns.name());
  REQUIRE(listed.ok());
  const std::string version = string_at(listed.value(), {"metadata", "resourceVersion"});

  SECTION("events written after the list arrive, and cancellation ends the stream within a second") {
    std::stop_source stop;
    std::string received;
    std::mutex received_mutex;
    std::atomic<bool> saw_added{false};
    Result<StreamEnd> ended = StreamEnd::ServerClosed;
    std::thread watcher([&] {
      WatchOptions options;
      options.resource_version = version;
      ended = client.watch(
          type, ns.name(), options,
          [&](std::string_view chunk) {
            std::lock_guard lock(received_mutex);
            received.append(chunk);
            if (received.find(R"("type":"ADDED")") != std::string::npos &&
                received.find("streamed") != std::string::npos)
              saw_added = true;
            return true;
          },
          stop.get_token());
    });
    REQUIRE(client.create(type, ns.name(), config_map("streamed")).ok());
    for (int i = 0; i < 100 && !saw_added; ++i) std::this_thread::sleep_for(100ms);
    CHECK(saw_added);
    // Quiet stream now: stop it and time how long the watcher takes to return.
    std::this_thread::sleep_for(300ms);
    const auto stop_requested = std::chrono::steady_clock::now();
    stop.request_stop();
    watcher.join();
    const auto took = std::chrono::steady_clock::now() - stop_requested;
    CHECK(took < 1s);
    REQUIRE_FALSE(ended.ok());
    CHECK(ended.error().reason == Reason::Cancelled);
  }

  SECTION("the handler can stop the stream") {
    REQUIRE(client.create(type, ns.name(), config_map("first")).ok());
    WatchOptions options;
    options.resource_version = version;
    int chunks = 0;
    auto ended = client.watch(type, ns.name(), options, [&](std::string_view) { return ++chunks < 1; });
    REQUIRE(ended.ok());
    CHECK(ended.value() == StreamEnd::StoppedByHandler);
  }

  SECTION("the server ends a watch after timeoutSeconds") {
    WatchOptions options;
    options.resource_version = version;
    options.timeout_seconds = 1;
    const auto started = std::chrono::steady_clock::now();
    auto ended = client.watch(type, ns.name(), options, [](std::string_view) { return true; });
    INFO((ended ? std::string() : ended.error().to_string()));
    REQUIRE(ended.ok());
    CHECK(ended.value() == StreamEnd::ServerClosed);
    CHECK(std::chrono::steady_clock::now() - started < 10s);
  }

  SECTION("a stream with no byte for the idle timeout ends as Timeout") {
    WatchOptions options;
    options.resource_version = version;
    options.allow_bookmarks = false;
    options.stream.idle_timeout = 1500ms;
    auto ended = client.watch(type, ns.name(), options, [](std::string_view) { return true; });
    REQUIRE_FALSE(ended.ok());
    CHECK(ended.error().reason == Reason::Timeout);
  }

  SECTION("a watch the server refuses at once ends with the error of its Status") {
    ConfigSearch search;
    search.kubeconfig_path = myop::testenv::kubeconfig_for_user("myop-stream-nobody");
    auto config = load_client_config(search);
    REQUIRE(config.ok());
    Client nobody = client_for(config.value());
    bool called = false;
    auto ended =
        nobody.watch(type, ns.name(), WatchOptions{}, [&](std::string_view) { return called = true; });
    REQUIRE_FALSE(ended.ok());
    INFO(ended.error().to_string());
    CHECK(ended.error().reason == Reason::Forbidden);
    CHECK(ended.error().message.find("myop-stream-nobody") != std::string::npos);
    CHECK_FALSE(called);
  }
}

TEST_CASE("a request honours its deadline and its stop token", "[integration][kube][client]") {
  Client client = admin_client();
  std::stop_source stopped;
  stopped.request_stop();
  auto cancelled = client.get(resources::namespaces(), "", "default", {}, stopped.get_token());
  REQUIRE_FALSE(cancelled.ok());
  CHECK(cancelled.error().reason == Reason::Cancelled);

  Request slow;
  slow.path = "/api/v1/namespaces";
  slow.timeout = 1ms;
  auto late = client.request_json(slow);
  if (!late.ok()) CHECK(late.error().reason == Reason::Timeout);  // 1 ms may rarely be enough
}

TEST_CASE("an answer larger than the request's limit fails at once, not retried",
          "[integration][kube][client]") {
  auto metrics = std::make_shared<RecordingMetrics>();
  TransportOptions options;
  options.metrics = metrics;
  Client client = client_for(admin_config(), options);
  Request request;
  request.path = "/api/v1/namespaces/default";
  request.maximum_response_bytes = 64;  // the Namespace is a few hundred bytes
  auto refused = client.request_json(request);
  REQUIRE_FALSE(refused.ok());
  INFO(refused.error().to_string());
  CHECK(refused.error().reason == Reason::Transport);
  CHECK(refused.error().permanent);
  CHECK(refused.error().message.find("to GET /api/v1/namespaces/default is larger than the client's limit of "
                                     "64 bytes") != std::string::npos);
  CHECK(metrics->count("<error>") == 1);

  request.maximum_response_bytes = kMaximumObjectJsonBytes;
  CHECK(client.request_json(request).ok());
}
