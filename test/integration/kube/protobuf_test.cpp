// The protobuf decoder against the real API server: every built-in kind the operator reads, fetched as
// JSON and as protobuf, must decode to the same tree (list items may add their apiVersion and kind,
// which the JSON of built-in lists leaves out); lists and watches too.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "kube/client.h"
#include "kube/object.h"
#include "kube/protobuf.h"
#include "kube/watch_parser.h"
#include "kube_test_support.h"
#include "support/runtime_test_support.h"

using namespace myop::kube;
using namespace myop::kube::testing;
using namespace std::chrono_literals;
using myop::runtime::testing::eventually;

namespace {

Client json_client() {
  return Client(transport_for(admin_config()), "myop-integration", ClientOptions{WireFormat::Json});
}
Client protobuf_client() {
  return Client(transport_for(admin_config()), "myop-integration", ClientOptions{WireFormat::Protobuf});
}

// "" when `decoded` (from protobuf) holds exactly what `expected` (from JSON) does, with the same values
// (an object may add apiVersion and kind); else the first difference, with its path.
std::string difference(const rapidjson::Value& expected, const rapidjson::Value& decoded,
                       const std::string& path) {
  if (expected.IsObject() && decoded.IsObject()) {
    for (const auto& member : expected.GetObject()) {
      const std::string name(member.name.GetString(), member.name.GetStringLength());
      const JsonValue* other = find_member(decoded, name);
      if (other == nullptr) return path + "." + name + " is missing";
      if (auto found = difference(member.value, *other, path + "." + name); !found.empty()) return found;
    }
    for (const auto& member : decoded.GetObject()) {
      const std::string name(member.name.GetString(), member.name.GetStringLength());
      if (find_member(expected, name) == nullptr && name != "apiVersion" && name != "kind")
        return path + "." + name + " is extra: " + to_json_string(member.value);
    }
    return {};
  }
  if (expected.IsArray() && decoded.IsArray()) {
    if (expected.Size() != decoded.Size())
      return path + " has " + std::to_string(decoded.Size()) + " items, not " +
             std::to_string(expected.Size());
    for (rapidjson::SizeType i = 0; i < expected.Size(); ++i)
      if (auto found = difference(expected[i], decoded[i], path + "[" + std::to_string(i) + "]");
          !found.empty())
        return found;
    return {};
  }
  if (expected == decoded) return {};
  return path + " is " + to_json_string(decoded) + ", not " + to_json_string(expected);
}

// A Deployment that uses the fields whose protobuf shape differs from their JSON: a Quantity map,
// IntOrStrings, Go's embedded structs (VolumeSource, LocalObjectReference, ProbeHandler), times.
std::string deployment_json(const std::string& name) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name + R"(",
    "labels":{"app":")" +
         name + R"("},"annotations":{"myorg.io/spec-hash":"abc"}},
    "spec":{"replicas":0,"selector":{"matchLabels":{"app":")" +
         name + R"("}},
      "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},
      "template":{"metadata":{"labels":{"app":")" +
         name + R"("}},"spec":{
        "containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":8080}],
          "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"api","key":"token","optional":true}}}],
          "resources":{"limits":{"cpu":"500m","memory":"64Mi"},"requests":{"cpu":"0.1"}},
          "readinessProbe":{"httpGet":{"path":"/ready","port":"http"},"periodSeconds":5},
          "volumeMounts":[{"name":"scratch","mountPath":"/tmp"}]}],
        "volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"1Gi"}},
                   {"name":"settings","configMap":{"name":"settings","defaultMode":420}}]}}}})";
}

}  // namespace

TEST_CASE("protobuf and JSON reads of built-in kinds decode to the same objects",
          "[integration][kube][protobuf]") {
  myop::testenv::ScopedNamespace ns("kube-protobuf");
  Client json = json_client();
  Client protobuf = protobuf_client();

  struct Case {
    ResourceType type;
    std::string name;
    std::string body;
  };
  const std::vector<Case> cases{
      {resources::deployments(), "web", deployment_json("web")},
      {resources::secrets(), "api",
       R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"api"},"data":{"token":"AAH+/w=="},"type":"Opaque"})"},
      {resources::config_maps(), "settings",
       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"1","b":"zwei über"},"binaryData":{"c":"/w=="}})"},
      {resources::leases(), "leader",
       R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"leader"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-12-06T10:00:00.123456Z","leaseTransitions":0}})"},
      {resources::events(), "seen",
       R"({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"seen"},"eventTime":"2026-12-06T10:00:00.000001Z","reportingController":"myorg.io/my-operator","reportingInstance":"a","action":"Reconcile","reason":"Synced","type":"Normal","note":"ok","regarding":{"kind":"ConfigMap","name":"settings","namespace":")" +
           ns.name() + R"("}})"},
  };
  for (const Case& c : cases) {
    INFO(c.type.qualified_resource() << " " << c.name);
    auto created = json.create(c.type, ns.name(), parse_json(c.body));
    INFO((created ? std::string() : created.error().to_string()));
    REQUIRE(created.ok());
    CHECK(!protobuf.read_accept(c.type).empty());

    // The same version both ways: the deployment controller writes the Deployment's status meanwhile,
    // so read again until the two reads land on one resourceVersion.
    Result<rapidjson::Document> as_json = make_error(Reason::Unknown, "not read");
    Result<rapidjson::Document> as_protobuf = make_error(Reason::Unknown, "not read");
    eventually(
        [&] {
          as_json = json.get(c.type, ns.name(), c.name);
          as_protobuf = protobuf.get(c.type, ns.name(), c.name);
          return !as_json.ok() || !as_protobuf.ok() ||
                 string_at(as_json.value(), {"metadata", "resourceVersion"}) ==
                     string_at(as_protobuf.value(), {"metadata", "resourceVersion"});
        },
        5s);
    REQUIRE(as_json.ok());
    INFO((as_protobuf ? std::string() : as_protobuf.error().to_string()));
    REQUIRE(as_protobuf.ok());
    REQUIRE(string_at(as_json.value(), {"metadata", "resourceVersion"}) ==
            string_at(as_protobuf.value(), {"metadata", "resourceVersion"}));
    CHECK(difference(as_json.value(), as_protobuf.value(), "") == "");
    CHECK(string_at(as_protobuf.value(), {"kind"}) == c.type.kind);
  }

  // The answer really was protobuf (the client falls back to JSON silently otherwise).
  Request request;
  request.path = object_path(resources::deployments(), ns.name(), "web");
  request.accept = std::string(kProtobufOrJsonAccept);
  auto raw = protobuf.transport().send(request);
  REQUIRE(raw.ok());
  CHECK(is_protobuf_media_type(raw->content_type));
  CHECK(raw->body.starts_with(std::string_view("k8s\0", 4)));

  // A list page, items and continue token included.
  ListOptions page;
  page.limit = 2;
  // (kube-controller-manager may add kube-root-ca.crt between two lists: read until both hold the same
  // objects at the same versions.)
  auto versions = [](const Result<rapidjson::Document>& list) {
    std::string names;
    if (list.ok() && list.value().HasMember("items"))
      for (const auto& item : list.value()["items"].GetArray())
        names += string_at(item, {"metadata", "name"}) + "@" +
                 string_at(item, {"metadata", "resourceVersion"}) + " ";
    return names;
  };
  Result<rapidjson::Document> json_list = make_error(Reason::Unknown, "not read");
  Result<rapidjson::Document> protobuf_list = make_error(Reason::Unknown, "not read");
  eventually(
      [&] {
        json_list = json.list(resources::config_maps(), ns.name(), page);
        protobuf_list = protobuf.list(resources::config_maps(), ns.name(), page);
        return versions(json_list) == versions(protobuf_list);
      },
      5s);
  REQUIRE(json_list.ok());
  REQUIRE(protobuf_list.ok());
  CHECK(string_at(protobuf_list.value(), {"kind"}) == "ConfigMapList");
  CHECK(difference(json_list.value()["items"], protobuf_list.value()["items"], "items") == "");

  // An error answer in protobuf still names what is missing.
  auto missing = protobuf.get(resources::deployments(), ns.name(), "absent");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().reason == Reason::NotFound);
  CHECK(missing.error().name == "absent");
}

TEST_CASE("a protobuf watch streams the events a JSON watch does", "[integration][kube][protobuf]") {
  myop::testenv::ScopedNamespace ns("kube-protobuf-watch");
  Client json = json_client();
  Client protobuf = protobuf_client();
  const auto type = resources::deployments();
  REQUIRE(json.create(type, ns.name(), parse_json(deployment_json("a"))).ok());
  auto listed = json.list(type, ns.name());
  REQUIRE(listed.ok());
  const std::string from = string_at(listed.value(), {"metadata", "resourceVersion"});

  // Watch from the list's version in both encodings while the Deployment is scaled and deleted.
  struct Seen {
    std::vector<std::string> events;
    std::vector<std::string> json_objects;
    std::string content_type;
  };
  auto watch = [&](Client& client, Seen& seen, std::stop_source& stop) {
    WatchOptions options;
    options.resource_version = from;
    options.timeout_seconds = 30;
    WatchParser parser;
    options.stream.on_open = [&](std::string_view content_type) {
      seen.content_type = std::string(content_type);
      parser.set_encoding(watch_encoding_of(content_type));
    };
    return client.watch(
        type, ns.name(), options,
        [&](std::string_view chunk) {
          parser.append(chunk);
          while (auto event = parser.next()) {
            if (!event->ok()) {
              seen.events.push_back("error " + event->error().to_string());
              continue;
            }
            seen.events.push_back(std::string(watch_event_type_name(event->value().type)) + " " +
                                  std::string(event->value().resource_version()));
            seen.json_objects.push_back(event->value().object.to_json_string());
            if (event->value().type == WatchEventType::Deleted) return false;
          }
          return true;
        },
        stop.get_token());
  };
  Seen json_seen;
  Seen protobuf_seen;
  std::stop_source json_stop;
  std::stop_source protobuf_stop;
  std::thread json_thread([&] { (void)watch(json, json_seen, json_stop); });
  std::thread protobuf_thread([&] { (void)watch(protobuf, protobuf_seen, protobuf_stop); });

  REQUIRE(json.patch(type, ns.name(), "a", PatchType::Merge, R"({"spec":{"replicas":2}})").ok());
  REQUIRE(json.remove(type, ns.name(), "a").ok());
  json_thread.join();
  protobuf_thread.join();

  CHECK(is_protobuf_media_type(protobuf_seen.content_type));
  CHECK_FALSE(is_protobuf_media_type(json_seen.content_type));
  REQUIRE(protobuf_seen.events == json_seen.events);
  REQUIRE(protobuf_seen.events.size() >= 2);
  CHECK(protobuf_seen.events.back().starts_with("DELETED"));
  for (std::size_t i = 0; i < json_seen.json_objects.size(); ++i) {
    INFO("event " << i << ": " << json_seen.events[i]);
    CHECK(difference(parse_json(json_seen.json_objects[i]), parse_json(protobuf_seen.json_objects[i]), "") ==
          "");
  }
}
