#include "kube/protobuf.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "kube/canonical_json.h"
#include "kube/errors.h"
#include "kube/object.h"
#include "kube/watch_parser.h"
#include "support/watch_chunks.h"

extern const unsigned char myop_kubernetes_descriptor_set[];
extern const std::size_t myop_kubernetes_descriptor_set_size;

using myop::kube::decode_protobuf_document;
using myop::kube::decode_protobuf_object;
using myop::kube::Object;
using myop::kube::Reason;
using myop::kube::WatchEncoding;
using myop::kube::WatchEventType;
using myop::kube::WatchParser;

namespace {

namespace pb = google::protobuf;

// The reference encoder: libprotobuf's own serializer, on messages built from text format with the same
// descriptor set the decoder uses. Like the API server's Go marshaller it writes fields in field-number
// order; the decoded tree's members come in that order. The wire of the real API server is checked in
// test/integration/kube/protobuf_test.cpp.
class Encoder {
 public:
  Encoder() {
    pb::FileDescriptorSet set;
    REQUIRE(set.ParseFromArray(myop_kubernetes_descriptor_set,
                               static_cast<int>(myop_kubernetes_descriptor_set_size)));
    for (const auto& file : set.file()) REQUIRE(pool_.BuildFile(file) != nullptr);
  }

  std::string message(const std::string& type, const std::string& text) {
    const pb::Descriptor* descriptor = pool_.FindMessageTypeByName(type);
    REQUIRE(descriptor != nullptr);
    std::unique_ptr<pb::Message> message(factory_.GetPrototype(descriptor)->New());
    REQUIRE(pb::TextFormat::ParseFromString(text, message.get()));
    return message->SerializeAsString();
  }

  // "k8s\0" + runtime.Unknown{typeMeta, raw}.
  std::string envelope(const std::string& api_version, const std::string& kind, const std::string& raw) {
    const pb::Descriptor* descriptor = pool_.FindMessageTypeByName("k8s.io.apimachinery.pkg.runtime.Unknown");
    std::unique_ptr<pb::Message> unknown(factory_.GetPrototype(descriptor)->New());
    const pb::Reflection* reflection = unknown->GetReflection();
    pb::Message* type_meta =
        reflection->MutableMessage(unknown.get(), descriptor->FindFieldByName("typeMeta"));
    type_meta->GetReflection()->SetString(
        type_meta, type_meta->GetDescriptor()->FindFieldByName("apiVersion"), api_version);
    type_meta->GetReflection()->SetString(type_meta, type_meta->GetDescriptor()->FindFieldByName("kind"),
                                          kind);
    reflection->SetString(unknown.get(), descriptor->FindFieldByName("raw"), raw);
    return std::string("k8s\0", 4) + unknown->SerializeAsString();
  }

  // One frame of a ;stream=watch body: a 4-byte big-endian length and a WatchEvent.
  std::string watch_frame(const std::string& type, const std::string& enveloped_object) {
    const pb::Descriptor* descriptor =
        pool_.FindMessageTypeByName("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent");
    std::unique_ptr<pb::Message> event(factory_.GetPrototype(descriptor)->New());
    const pb::Reflection* reflection = event->GetReflection();
    reflection->SetString(event.get(), descriptor->FindFieldByName("type"), type);
    pb::Message* object = reflection->MutableMessage(event.get(), descriptor->FindFieldByName("object"));
    object->GetReflection()->SetString(object, object->GetDescriptor()->FindFieldByName("raw"),
                                       enveloped_object);
    const std::string body = event->SerializeAsString();
    std::string frame(4, '\0');
    for (int i = 0; i < 4; ++i)
      frame[static_cast<std::size_t>(i)] = static_cast<char>((body.size() >> (8 * (3 - i))) & 0xff);
    return frame + body;
  }

 private:
  pb::DescriptorPool pool_;
  pb::DynamicMessageFactory factory_;
};

// A Deployment as the API server writes it: pointer fields set to zero (replicas), Go's always-written
// empty fields, a Quantity map, IntOrStrings of both kinds, an unset time (empty message), a set one.
const char* const kDeployment = R"pb(
  metadata {
    name: "web"
    namespace: "team-a"
    uid: "9d3c"
    resourceVersion: "4711"
    generation: 3
    generateName: ""
    creationTimestamp { seconds: 1764443920 }
    labels { key: "app" value: "web" }
    annotations { key: "myorg.io/spec-hash" value: "abc123" }
    ownerReferences {
      apiVersion: "myorg.io/v1beta1"
      kind: "MyResource"
      name: "web"
      uid: "77aa"
      controller: true
      blockOwnerDeletion: true
    }
    finalizers: "myorg.io/cleanup"
    managedFields {
      manager: "my-operator"
      operation: "Apply"
      apiVersion: "apps/v1"
      time {}
      fieldsType: "FieldsV1"
      fieldsV1 { Raw: "{\"f:spec\":{\"f:replicas\":{}}}" }
    }
  }
  spec {
    replicas: 0
    selector { matchLabels { key: "app" value: "web" } }
    template {
      metadata {
        creationTimestamp {}
        labels { key: "app" value: "web" }
      }
      spec {
        containers {
          name: "web"
          image: "nginx:1.27"
          ports { containerPort: 8080 protocol: "TCP" }
          resources {
            limits {
              key: "cpu"
              value { string: "500m" }
            }
          }
          env {
            name: "TOKEN"
            valueFrom {
              secretKeyRef {
                localObjectReference { name: "api" }
                key: "token"
              }
            }
          }
          readinessProbe {
            handler {
              httpGet {
                path: "/ready"
                port { type: 0 intVal: 8080 }
              }
            }
            periodSeconds: 5
          }
        }
        terminationGracePeriodSeconds: 30
        volumes {
          name: "scratch"
          volumeSource { emptyDir {} }
        }
      }
    }
    strategy {
      type: "RollingUpdate"
      rollingUpdate {
        maxUnavailable { type: 0 intVal: 1 }
        maxSurge { type: 1 strVal: "25%" }
      }
    }
    revisionHistoryLimit: 10
  }
  status {
    observedGeneration: 3
    replicas: 0
    conditions {
      type: "Available"
      status: "True"
      lastUpdateTime { seconds: 1764443925 }
      lastTransitionTime { seconds: 1764443925 }
      reason: "MinimumReplicasAvailable"
    }
  }
)pb";

std::string json_at(const Object& object, std::initializer_list<std::string_view> path) {
  const auto* value = object.view().find(path);
  REQUIRE(value != nullptr);
  return myop::kube::to_json_string(*value);
}

}  // namespace

TEST_CASE("protobuf decoder builds the JSON tree of a Deployment", "[kube][protobuf]") {
  Encoder encoder;
  const std::string body = encoder.envelope("apps/v1", "Deployment",
                                            encoder.message("k8s.io.api.apps.v1.Deployment", kDeployment));
  auto decoded = decode_protobuf_object(body);
  REQUIRE(decoded.ok());
  const Object& deployment = decoded.value();
  const auto view = deployment.view();

  CHECK(view.api_version() == "apps/v1");
  CHECK(view.kind() == "Deployment");
  CHECK(view.name() == "web");
  CHECK(view.namespace_name() == "team-a");
  CHECK(view.resource_version() == "4711");
  CHECK(view.generation() == 3);
  CHECK(view.creation_timestamp() == "2025-11-29T19:18:40Z");
  CHECK(view.label("app") == std::optional<std::string_view>("web"));
  CHECK(view.annotation("myorg.io/spec-hash") == std::optional<std::string_view>("abc123"));
  REQUIRE(view.controller_owner().has_value());
  CHECK(view.controller_owner()->uid == "77aa");
  CHECK(view.controller_owner()->block_owner_deletion);
  CHECK(view.has_finalizer("myorg.io/cleanup"));
  CHECK_FALSE(view.is_being_deleted());

  // A pointer field set to zero is there (scaled to zero is not "unset"); an omitempty one Go wrote
  // empty is not, as in the JSON (status.replicas 0, generateName ""), and neither is an unset
  // omitzero time.
  CHECK(json_at(deployment, {"spec", "replicas"}) == "0");
  CHECK(deployment.view().find({"metadata", "generateName"}) == nullptr);
  CHECK(json_at(deployment, {"status"}) ==
        R"({"observedGeneration":3,"conditions":[{"type":"Available","status":"True",)"
        R"("reason":"MinimumReplicasAvailable","lastUpdateTime":"2025-11-29T19:18:45Z",)"
        R"("lastTransitionTime":"2025-11-29T19:18:45Z"}]})");
  CHECK(json_at(deployment, {"spec", "strategy"}) ==
        R"({"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1,"maxSurge":"25%"}})");
  CHECK(json_at(deployment, {"spec", "template", "metadata"}) == R"({"labels":{"app":"web"}})");
  CHECK(json_at(deployment, {"spec", "template", "spec", "containers"}) ==
        R"([{"name":"web","image":"nginx:1.27","ports":[{"containerPort":8080,"protocol":"TCP"}],)"
        R"("env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"api","key":"token"}}}],)"
        R"("resources":{"limits":{"cpu":"500m"}},)"
        R"("readinessProbe":{"httpGet":{"path":"/ready","port":8080},"periodSeconds":5}}])");
  // Go's embedded structs (VolumeSource, LocalObjectReference, ProbeHandler) are inline in the JSON.
  CHECK(json_at(deployment, {"spec", "template", "spec", "volumes"}) ==
        R"([{"name":"scratch","emptyDir":{}}])");
  CHECK(json_at(deployment, {"status", "conditions"}) ==
        R"([{"type":"Available","status":"True","reason":"MinimumReplicasAvailable",)"
        R"("lastUpdateTime":"2025-11-29T19:18:45Z","lastTransitionTime":"2025-11-29T19:18:45Z"}])");
  CHECK(json_at(deployment, {"metadata", "managedFields"}) ==
        R"([{"manager":"my-operator","operation":"Apply","apiVersion":"apps/v1","time":null,)"
        R"("fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}])");
}

TEST_CASE("protobuf decoder can skip managedFields on the wire", "[kube][protobuf]") {
  Encoder encoder;
  const std::string body = encoder.envelope("apps/v1", "Deployment",
                                            encoder.message("k8s.io.api.apps.v1.Deployment", kDeployment));
  auto decoded = decode_protobuf_object(body, {.drop_managed_fields = true});
  REQUIRE(decoded.ok());
  CHECK(decoded->view().find({"metadata", "managedFields"}) == nullptr);
  CHECK(decoded->view().name() == "web");
}

TEST_CASE("protobuf decoder writes bytes as base64 and MicroTime with microseconds", "[kube][protobuf]") {
  Encoder encoder;
  auto secret = decode_protobuf_object(encoder.envelope(
      "v1", "Secret",
      encoder.message("k8s.io.api.core.v1.Secret", R"pb(metadata { name: "cert" }
                                                        data { key: "tls.key" value: "\x00\x01\xfe\xff" }
                                                        type: "kubernetes.io/tls")pb")));
  REQUIRE(secret.ok());
  CHECK(json_at(secret.value(), {"data"}) == R"({"tls.key":"AAH+/w=="})");
  CHECK(json_at(secret.value(), {"type"}) == R"("kubernetes.io/tls")");

  auto lease = decode_protobuf_object(
      encoder.envelope("coordination.k8s.io/v1", "Lease",
                       encoder.message("k8s.io.api.coordination.v1.Lease",
                                       R"pb(metadata { name: "leader" }
                                            spec {
                                              holderIdentity: "a"
                                              leaseDurationSeconds: 15
                                              renewTime { seconds: 1764443920 nanos: 123456000 }
                                              leaseTransitions: 0
                                            })pb")));
  REQUIRE(lease.ok());
  CHECK(
      json_at(lease.value(), {"spec"}) ==
      R"({"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2025-11-29T19:18:40.123456Z","leaseTransitions":0})");
}

TEST_CASE("protobuf decoder gives list items their apiVersion and kind", "[kube][protobuf]") {
  Encoder encoder;
  auto list = decode_protobuf_document(
      encoder.envelope("v1", "ConfigMapList",
                       encoder.message("k8s.io.api.core.v1.ConfigMapList",
                                       R"pb(metadata { resourceVersion: "900" continue: "next" }
                                            items {
                                              metadata { name: "a" resourceVersion: "800" }
                                              data { key: "k" value: "v" }
                                            }
                                            items { metadata { name: "b" resourceVersion: "801" } })pb")));
  REQUIRE(list.ok());
  CHECK(myop::kube::string_at(list.value(), {"metadata", "continue"}) == "next");
  const auto& items = list.value()["items"];
  REQUIRE(items.Size() == 2);
  CHECK(
      myop::kube::to_json_string(items[0]) ==
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"800"},"data":{"k":"v"}})");
  CHECK(myop::kube::ObjectView(items[1]).kind() == "ConfigMap");
}

TEST_CASE("protobuf decoder refuses what it cannot decode, saying why", "[kube][protobuf]") {
  Encoder encoder;
  const std::string raw = encoder.message("k8s.io.api.apps.v1.Deployment", kDeployment);

  auto not_enveloped = decode_protobuf_object(raw);
  REQUIRE_FALSE(not_enveloped.ok());
  CHECK_THAT(not_enveloped.error().message, Catch::Contains("k8s magic"));

  auto unknown_kind = decode_protobuf_object(encoder.envelope("myorg.io/v1beta1", "MyResource", raw));
  REQUIRE_FALSE(unknown_kind.ok());
  CHECK_THAT(unknown_kind.error().message,
             Catch::Contains("no built-in schema for myorg.io/v1beta1 MyResource"));

  // Every truncation of a valid object is refused (none is a shorter valid object by luck: the cut
  // always lands inside a length-delimited field or leaves a length that overruns the end).
  const std::string enveloped = encoder.envelope("apps/v1", "Deployment", raw);
  for (std::size_t cut : {enveloped.size() - 1, enveloped.size() - 7, enveloped.size() / 2, std::size_t{9}}) {
    auto truncated = decode_protobuf_object(std::string_view(enveloped).substr(0, cut));
    INFO("cut at " << cut);
    REQUIRE_FALSE(truncated.ok());
    CHECK_THAT(truncated.error().message, Catch::Contains("protobuf"));
  }

  // A field whose wire type contradicts the schema (name, a string, sent as a varint).
  auto mistyped =
      decode_protobuf_object(encoder.envelope("v1", "ConfigMap", std::string("\x0a\x02\x08\x01", 4)));
  REQUIRE_FALSE(mistyped.ok());
  CHECK_THAT(mistyped.error().message, Catch::Contains("field name of ObjectMeta has wire type 0"));
}

TEST_CASE("protobuf schema knows the built-in kinds and nothing else", "[kube][protobuf]") {
  using myop::kube::protobuf_schema_known;
  CHECK(protobuf_schema_known("apps/v1", "Deployment"));
  CHECK(protobuf_schema_known("v1", "Secret"));
  CHECK(protobuf_schema_known("v1", "ConfigMap"));
  CHECK(protobuf_schema_known("v1", "Namespace"));
  CHECK(protobuf_schema_known("coordination.k8s.io/v1", "Lease"));
  CHECK(protobuf_schema_known("events.k8s.io/v1", "Event"));
  CHECK(protobuf_schema_known("v1", "Status"));
  CHECK_FALSE(protobuf_schema_known("myorg.io/v1beta1", "MyResource"));
  CHECK_FALSE(protobuf_schema_known("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
  CHECK_FALSE(protobuf_schema_known("apps/v1", ""));

  CHECK(myop::kube::is_protobuf_media_type("application/vnd.kubernetes.protobuf"));
  CHECK(myop::kube::is_protobuf_media_type("application/vnd.kubernetes.protobuf;stream=watch"));
  CHECK_FALSE(myop::kube::is_protobuf_media_type("application/json"));
}

TEST_CASE("a protobuf Status answer becomes the typed error it describes", "[kube][protobuf]") {
  Encoder encoder;
  const std::string status =
      encoder.envelope("v1", "Status",
                       encoder.message("k8s.io.apimachinery.pkg.apis.meta.v1.Status",
                                       R"pb(status: "Failure"
                                            message: "deployments.apps \"web\" not found"
                                            reason: "NotFound"
                                            details { name: "web" group: "apps" kind: "deployments" }
                                            code: 404)pb"));
  const auto error = myop::kube::error_from_response(404, status);
  CHECK(error.reason == Reason::NotFound);
  CHECK(error.name == "web");
  CHECK_THAT(error.message, Catch::Contains("not found"));
}

TEST_CASE("watch parser reads protobuf frames cut anywhere", "[kube][protobuf][watch_parser]") {
  Encoder encoder;
  auto config_map = [&](const std::string& name, const std::string& version) {
    return encoder.envelope("v1", "ConfigMap",
                            encoder.message("k8s.io.api.core.v1.ConfigMap",
                                            "metadata { name: \"" + name + "\" resourceVersion: \"" +
                                                version + "\" } data { key: \"a\" value: \"1\" }"));
  };
  const std::string bookmark =
      encoder.envelope("v1", "ConfigMap",
                       encoder.message("k8s.io.api.core.v1.ConfigMap",
                                       R"pb(metadata {
                                              resourceVersion: "12"
                                              annotations { key: "k8s.io/initial-events-end" value: "true" }
                                            })pb"));
  const std::string gone = encoder.envelope("v1", "Status",
                                            encoder.message("k8s.io.apimachinery.pkg.apis.meta.v1.Status",
                                                            R"pb(status: "Failure"
                                                                 message: "too old resource version: 5 (12)"
                                                                 reason: "Expired"
                                                                 code: 410)pb"));
  const std::string stream =
      encoder.watch_frame("ADDED", config_map("first", "10")) + encoder.watch_frame("BOOKMARK", bookmark) +
      encoder.watch_frame("MODIFIED", config_map("first", "13")) +
      encoder.watch_frame("DELETED", config_map("first", "14")) + encoder.watch_frame("ERROR", gone);

  for (std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{7}}) {
    INFO("chunks of " << chunk);
    WatchParser parser;
    parser.set_encoding(WatchEncoding::Protobuf);
    const auto seen = myop::testing::parse_in_chunks(parser, stream, chunk, [](const auto& event) {
      return std::string(myop::kube::watch_event_type_name(event.type)) + " " +
             std::string(event.resource_version()) + (event.is_initial_events_end() ? " end" : "");
    });
    CHECK(seen ==
          std::vector<std::string>{"ADDED 10", "BOOKMARK 12 end", "MODIFIED 13", "DELETED 14", "error Gone"});
    CHECK(parser.pending_bytes() == 0);
  }
}

TEST_CASE("watch parser skips an over-long protobuf frame and reads the next",
          "[kube][protobuf][watch_parser]") {
  Encoder encoder;
  const std::string small = encoder.watch_frame(
      "ADDED", encoder.envelope("v1", "ConfigMap",
                                encoder.message("k8s.io.api.core.v1.ConfigMap",
                                                R"pb(metadata { name: "ok" resourceVersion: "3" })pb")));
  const std::string large = encoder.watch_frame(
      "ADDED", encoder.envelope("v1", "ConfigMap",
                                encoder.message("k8s.io.api.core.v1.ConfigMap",
                                                "metadata { name: \"big\" } data { key: \"a\" value: \"" +
                                                    std::string(300, 'x') + "\" }")));
  WatchParser parser(200);
  parser.set_encoding(WatchEncoding::Protobuf);
  parser.append(large.substr(0, 100));
  auto first = parser.next();
  REQUIRE(first.has_value());
  REQUIRE_FALSE(first->ok());
  CHECK_THAT(first->error().message, Catch::Contains("longer than 200 bytes"));
  parser.append(large.substr(100) + small);
  auto second = parser.next();
  REQUIRE(second.has_value());
  REQUIRE(second->ok());
  CHECK(second->value().object.name() == "ok");
  CHECK(second->value().type == WatchEventType::Added);
}

TEST_CASE("go_duration_string writes Durations as Go does", "[kube][protobuf]") {
  using myop::kube::go_duration_string;
  CHECK(go_duration_string(0) == "0s");
  CHECK(go_duration_string(10) == "10ns");
  CHECK(go_duration_string(1'000) == "1\xc2\xb5s");
  CHECK(go_duration_string(1'500'000) == "1.5ms");
  CHECK(go_duration_string(1'500'000'000) == "1.5s");
  CHECK(go_duration_string(90'000'000'000) == "1m30s");
  CHECK(go_duration_string(3'600'000'000'000) == "1h0m0s");
  CHECK(go_duration_string(-2'000'000'000) == "-2s");
  CHECK(go_duration_string(3'723'000'000'001) == "1h2m3.000000001s");
}
