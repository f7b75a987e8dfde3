// MyResource reads in CBOR against real API servers: lane B's has the CBORServingAndStorage gate on
// (hack/testenv --cbor, test/CMakeLists.txt) and answers CBOR, lane A's does not and answers the JSON the
// client falls back to. Either way the objects are the ones a JSON read gives.
#include <catch2/catch.hpp>

#include <thread>

#include "kube/canonical_json.h"
#include "kube/cbor.h"
#include "kube/client.h"
#include "kube/object.h"
#include "kube/watch_parser.h"
#include "kube_test_support.h"
#include "myresource/types.h"

using namespace myop::kube;
using namespace myop::kube::testing;
using namespace std::chrono_literals;

namespace {

Client client_with(WireFormat custom_resources) {
  ClientOptions options;
  options.custom_resources = custom_resources;
  return Client(transport_for(admin_config()), "myop-integration", options);
}

// Whether the API server runs with the gate (its /metrics says, as kubernetes_feature_enabled).
bool cbor_gate_on(Client& client) {
  Request request;
  request.path = "/metrics";
  request.accept = "text/plain";
  request.maximum_response_bytes = std::size_t{64} << 20U;
  auto metrics = client.transport().send(request);
  if (!metrics || metrics->status_code != 200) FAIL("cannot read the API server's /metrics");
  const std::string& text = metrics->body;
  const auto at = text.find("kubernetes_feature_enabled{name=\"CBORServingAndStorage\"");
  if (at == std::string::npos) FAIL("the API server's /metrics does not name the CBORServingAndStorage gate");
  return text.substr(at, text.find('\n', at) - at).ends_with(" 1");
}

std::string my_resource(const std::string& name, const std::string& image) {
  return R"({"apiVersion":"myorg.io/v1beta1","kind":"MyResource","metadata":{"name":")" + name +
         R"(","labels":{"tier":"web"}},"spec":{"image":")" + image + R"(","replicas":2}})";
}

// What a read of one MyResource answered with: its Content-Type and the tree.
struct Read {
  std::string content_type;
  rapidjson::Document object;
};
Read read_raw(Client& client, const std::string& namespace_name, const std::string& name) {
  const auto type = myop::myresource::myresource_type();
  Request request;
  request.path = object_path(type, namespace_name, name);
  request.accept = client.read_accept(type);
  auto answer = client.transport().send(request);
  REQUIRE(answer.ok());
  REQUIRE(answer->status_code == 200);
  Read read{answer->content_type, {}};
  auto decoded = is_cbor_media_type(answer->content_type) ? decode_cbor_document(answer->body)
                                                          : parse_json_document(answer->body, JsonLimits{});
  INFO((decoded ? std::string() : decoded.error().message));
  REQUIRE(decoded.ok());
  read.object = std::move(decoded).value();
  return read;
}

// Lists and watches in the client's encoding while a MyResource changes; returns "TYPE resourceVersion
// spec.image" per event and the content type the watch was answered in.
std::pair<std::vector<std::string>, std::string> watch_changes(Client& client, Client& writer,
                                                               const std::string& namespace_name) {
  const auto type = myop::myresource::myresource_type();
  auto listed = client.list(type, namespace_name);
  REQUIRE(listed.ok());
  CHECK(listed.value()["items"].Size() == 1);
  WatchOptions options;
  options.resource_version = string_at(listed.value(), {"metadata", "resourceVersion"});
  options.timeout_seconds = 30;
  std::string content_type;
  std::vector<std::string> events;
  WatchParser parser;
  options.stream.on_open = [&](std::string_view type_of_body) {
    content_type = std::string(type_of_body);
    parser.set_encoding(watch_encoding_of(type_of_body));
  };
  std::thread watcher([&] {
    (void)client.watch(type, namespace_name, options, [&](std::string_view chunk) {
      parser.append(chunk);
      while (auto event = parser.next()) {
        if (!event->ok()) {
          events.push_back("error " + event->error().message);
          return false;
        }
        events.push_back(std::string(watch_event_type_name(event->value().type)) + " " +
                         myop::kube::string_at(event->value().object.json(), {"spec", "image"}));
        if (event->value().type == WatchEventType::Deleted) return false;
      }
      return true;
    });
  });
  std::this_thread::sleep_for(200ms);
  REQUIRE(
      writer.patch(type, namespace_name, "web", PatchType::Merge, R"({"spec":{"image":"nginx:2"}})").ok());
  REQUIRE(writer.remove(type, namespace_name, "web").ok());
  watcher.join();
  return {events, content_type};
}

void check_reads(bool gate_on) {
  myop::testenv::ScopedNamespace ns(gate_on ? "kube-cbor" : "kube-cbor-fallback");
  myop::testenv::apply_crd();
  Client json = client_with(WireFormat::Json);
  Client cbor = client_with(WireFormat::Cbor);
  const auto type = myop::myresource::myresource_type();
  REQUIRE(json.create(type, ns.name(), parse_json(my_resource("web", "nginx:1"))).ok());

  const Read as_json = read_raw(json, ns.name(), "web");
  const Read as_cbor = read_raw(cbor, ns.name(), "web");
  CHECK(is_cbor_media_type(as_cbor.content_type) == gate_on);
  CHECK_FALSE(is_cbor_media_type(as_json.content_type));
  // The same object either way, to the last member (CBOR sorts keys by their encoded bytes, shortest
  // first; JSON alphabetically: compared in canonical form).
  CHECK(canonical_json(as_cbor.object) == canonical_json(as_json.object));

  // Through the client's verbs: get, list and a watch, each in the negotiated encoding.
  auto fetched = cbor.get(type, ns.name(), "web");
  REQUIRE(fetched.ok());
  CHECK(canonical_json(fetched.value()) == canonical_json(as_json.object));
  auto missing = cbor.get(type, ns.name(), "absent");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().reason == Reason::NotFound);

  auto [events, content_type] = watch_changes(cbor, json, ns.name());
  CHECK(is_cbor_media_type(content_type) == gate_on);
  CHECK(events == std::vector<std::string>{"MODIFIED nginx:2", "DELETED nginx:2"});
}

}  // namespace

TEST_CASE("MyResource reads are CBOR where the API server serves it", "[integration][kube][cbor]") {
  Client client = admin_client();
  REQUIRE(cbor_gate_on(client));  // lane B's control plane (test/CMakeLists.txt)
  check_reads(true);
}

TEST_CASE("MyResource reads fall back to JSON where the API server has no CBOR",
          "[integration][kube][wire]") {
  Client client = admin_client();
  REQUIRE_FALSE(cbor_gate_on(client));  // lane A's control plane
  check_reads(false);
}
