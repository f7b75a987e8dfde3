// The REST client's requests, checked against a recording Transport (the real server is in
// test/integration/kube/).
#include "kube/client.h"

#include <catch2/catch.hpp>

#include <deque>

#include "support/fake_clock.h"

using namespace myop::kube;

namespace {

class RecordingTransport final : public Transport {
 public:
  std::vector<Request> requests;
  std::deque<Result<Response>> answers;

  Result<Response> send(const Request& request, std::stop_token) override {
    requests.push_back(request);
    if (answers.empty()) return Response{200, "{}", "application/json"};
    auto answer = std::move(answers.front());
    answers.pop_front();
    return answer;
  }
  Result<StreamEnd> stream(const Request& request, const ChunkHandler& on_chunk, std::stop_token,
                           const StreamOptions&) override {
    requests.push_back(request);
    on_chunk(R"({"type":"ADDED","object":{}})");
    return StreamEnd::ServerClosed;
  }
  const std::string& host() const override { return host_; }

 private:
  std::string host_ = "test:443";
};

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document document;
  document.Parse(text.c_str());
  return document;
}

// Every GET answered 404, on a clock of the test's.
class AbsentTransport final : public Transport {
 public:
  explicit AbsentTransport(std::shared_ptr<const myop::base::Clock> clock) : clock_(std::move(clock)) {}
  int gets = 0;

  Result<Response> send(const Request&, std::stop_token) override {
    ++gets;
    return Response{404, R"({"kind":"Status","reason":"NotFound","message":"not found","code":404})", ""};
  }
  Result<StreamEnd> stream(const Request&, const ChunkHandler&, std::stop_token,
                           const StreamOptions&) override {
    return StreamEnd::ServerClosed;
  }
  const std::string& host() const override { return host_; }
  const std::shared_ptr<const myop::base::Clock>& clock() const override { return clock_; }

 private:
  std::shared_ptr<const myop::base::Clock> clock_;
  std::string host_ = "test:443";
};

std::string query_value(const Request& request, const std::string& name) {
  for (const auto& [key, value] : request.query)
    if (key == name) return value;
  return "<absent>";
}

}  // namespace

TEST_CASE("verbs map onto methods, paths, content types and query parameters", "[kube][client]") {
  auto transport = std::make_shared<RecordingTransport>();
  Client client(transport, "my-operator");
  const auto object =
      parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"7"}})");

  SECTION("create") {
    REQUIRE(client.create(resources::config_maps(), "ns", object).ok());
    const Request& sent = transport->requests.back();
    CHECK(sent.method == "POST");
    CHECK(sent.path == "/api/v1/namespaces/ns/configmaps");
    CHECK(sent.content_type == "application/json");
    CHECK(query_value(sent, "fieldManager") == "my-operator");
    CHECK(sent.body.find(R"("resourceVersion":"7")") != std::string::npos);
  }
  SECTION("update sends the object's resourceVersion as the precondition") {
    REQUIRE(client.update(resources::config_maps(), "ns", object).ok());
    const Request& sent = transport->requests.back();
    CHECK(sent.method == "PUT");
    CHECK(sent.path == "/api/v1/namespaces/ns/configmaps/c");
    CHECK(sent.body.find(R"("resourceVersion":"7")") != std::string::npos);
  }
  SECTION("update_status goes to the status subresource") {
    REQUIRE(client
                .update_status(ResourceType{"myorg.io", "v1alpha1", "myresources", true, "MyResource"}, "ns",
                               object)
                .ok());
    CHECK(transport->requests.back().path == "/apis/myorg.io/v1alpha1/namespaces/ns/myresources/c/status");
  }
  SECTION("apply with force") {
    PatchOptions options;
    options.field_manager = "mgr";
    options.force = true;
    REQUIRE(client.apply(resources::deployments(), "ns", object, options).ok());
    const Request& sent = transport->requests.back();
    CHECK(sent.method == "PATCH");
    CHECK(sent.content_type == "application/apply-patch+yaml");
    CHECK(sent.path == "/apis/apps/v1/namespaces/ns/deployments/c");
    CHECK(query_value(sent, "fieldManager") == "mgr");
    CHECK(query_value(sent, "force") == "true");
  }
  SECTION("apply without a field manager uses the client's") {
    REQUIRE(client.apply(resources::deployments(), "ns", object, {}).ok());
    CHECK(query_value(transport->requests.back(), "fieldManager") == "my-operator");
    CHECK(query_value(transport->requests.back(), "force") == "<absent>");
  }
  SECTION("merge patch on a cluster-scoped object") {
    REQUIRE(client.patch(resources::namespaces(), "", "team", PatchType::Merge, R"({"metadata":{}})").ok());
    const Request& sent = transport->requests.back();
    CHECK(sent.path == "/api/v1/namespaces/team");
    CHECK(sent.content_type == "application/merge-patch+json");
    CHECK(query_value(sent, "fieldManager") == "<absent>");
  }
  SECTION("delete carries DeleteOptions with preconditions and propagation") {
    DeleteOptions options;
    options.propagation_policy = "Foreground";
    options.precondition_uid = "u-1";
    options.precondition_resource_version = "9";
    options.grace_period_seconds = 0;
    REQUIRE(client.remove(resources::deployments(), "ns", "web", options).ok());
    const Request& sent = transport->requests.back();
    CHECK(sent.method == "DELETE");
    auto body = parse(sent.body);
    CHECK(std::string(body["propagationPolicy"].GetString()) == "Foreground");
    CHECK(std::string(body["preconditions"]["uid"].GetString()) == "u-1");
    CHECK(std::string(body["preconditions"]["resourceVersion"].GetString()) == "9");
    CHECK(body["gracePeriodSeconds"].GetInt64() == 0);
  }
  SECTION("an object without a name cannot be updated") {
    auto nameless = parse(R"({"metadata":{}})");
    auto result = client.update(resources::config_maps(), "ns", nameless);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().reason == Reason::BadRequest);
    CHECK(transport->requests.empty());
  }
  SECTION("watch builds a streaming GET") {
    WatchOptions options;
    options.resource_version = "5";
    std::string received;
    auto ended = client.watch(resources::config_maps(), "", options, [&](std::string_view chunk) {
      received.append(chunk);
      return true;
    });
    REQUIRE(ended.ok());
    CHECK(transport->requests.back().path == "/api/v1/configmaps");
    CHECK(query_value(transport->requests.back(), "watch") == "true");
    CHECK(received.find("ADDED") != std::string::npos);
  }
}

TEST_CASE("non-2xx answers become typed errors", "[kube][client]") {
  auto transport = std::make_shared<RecordingTransport>();
  Client client(transport, "client-test");
  transport->answers.push_back(Response{
      404, R"({"kind":"Status","reason":"NotFound","message":"configmaps \"x\" not found","code":404})", ""});
  auto result = client.get(resources::config_maps(), "ns", "x");
  REQUIRE_FALSE(result.ok());
  CHECK(is_not_found(result.error()));
  transport->answers.push_back(Response{200, "not json", ""});
  auto garbage = client.get(resources::config_maps(), "ns", "x");
  REQUIRE_FALSE(garbage.ok());
  CHECK_THAT(
      garbage.error().message,
      Catch::Contains("GET /api/v1/namespaces/ns/configmaps/x: the API server answered HTTP 200 with a "
                      "body the client cannot use: invalid JSON at offset "));
  transport->answers.push_back(make_error(Reason::Transport, "connection refused"));
  auto broken = client.get(resources::config_maps(), "ns", "x");
  REQUIRE_FALSE(broken.ok());
  CHECK(is_transport(broken.error()));
}

TEST_CASE("answers are read with the limit of their kind and parsed with bounded depth", "[kube][client]") {
  auto transport = std::make_shared<RecordingTransport>();
  Client client(transport, "client-test");
  (void)client.get(resources::config_maps(), "ns", "x");
  (void)client.list(resources::config_maps(), "ns");
  (void)client.create(resources::config_maps(), "ns", parse(R"({"metadata":{"name":"x"}})"));
  REQUIRE(transport->requests.size() == 3);
  CHECK(transport->requests[0].maximum_response_bytes == kMaximumObjectJsonBytes);
  CHECK(transport->requests[1].maximum_response_bytes == kMaximumListJsonBytes);
  CHECK(transport->requests[2].maximum_response_bytes == kMaximumObjectJsonBytes);

  // The transport enforces the size while reading; the parser checks it again.
  transport->answers.push_back(Response{200, std::string(100'000, '['), "application/json"});
  auto deep = client.get(resources::config_maps(), "ns", "x");
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().reason == Reason::Unknown);
  CHECK(deep.error().message.find("GET /api/v1/namespaces/ns/configmaps/x") != std::string::npos);
  CHECK(deep.error().message.find("nested deeper than 128") != std::string::npos);

  Request small;
  small.path = "/api/v1/namespaces/ns/configmaps/x";
  small.maximum_response_bytes = 8;
  transport->answers.push_back(Response{200, R"({"a":"long enough"})", "application/json"});
  auto too_large = client.request_json(small);
  REQUIRE_FALSE(too_large.ok());
  CHECK(too_large.error().message.find("larger than the limit of 8 bytes") != std::string::npos);
}

TEST_CASE("list_all joins pages and falls back to a full list when the continue token expires",
          "[kube][client]") {
  auto transport = std::make_shared<RecordingTransport>();
  Client client(transport, "client-test");
  ListOptions options;
  options.limit = 2;
  options.resource_version = "0";

  SECTION("pages are joined in order") {
    transport->answers.push_back(Response{
        200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"c1","resourceVersion":"10"}})", ""});
    transport->answers.push_back(
        Response{200, R"({"items":[{"n":3}],"metadata":{"resourceVersion":"10"}})", ""});
    auto all = client.list_all(resources::config_maps(), "ns", options);
    REQUIRE(all.ok());
    REQUIRE(all.value()["items"].Size() == 3);
    CHECK(all.value()["items"][2]["n"].GetInt() == 3);
    CHECK_FALSE(all.value()["metadata"].HasMember("continue"));
    REQUIRE(transport->requests.size() == 2);
    CHECK(query_value(transport->requests[1], "continue") == "c1");
    CHECK(query_value(transport->requests[1], "resourceVersion") == "<absent>");
  }
  SECTION("410 in the middle restarts without a limit") {
    transport->answers.push_back(
        Response{200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"c1"}})", ""});
    transport->answers.push_back(Response{410, R"({"kind":"Status","reason":"Expired","code":410})", ""});
    transport->answers.push_back(
        Response{200, R"({"items":[{"n":1},{"n":2},{"n":3},{"n":4}],"metadata":{}})", ""});
    auto all = client.list_all(resources::config_maps(), "ns", options);
    REQUIRE(all.ok());
    CHECK(all.value()["items"].Size() == 4);
    REQUIRE(transport->requests.size() == 3);
    CHECK(query_value(transport->requests[2], "limit") == "<absent>");
    CHECK(query_value(transport->requests[2], "continue") == "<absent>");
  }
}

TEST_CASE("a 429 the transport gave up on keeps its Retry-After in the error", "[kube][client]") {
  auto transport = std::make_shared<RecordingTransport>();
  // API Priority and Fairness answers in plain text: the wait is only in the header.
  transport->answers.push_back(
      Response{429, "Too many requests, please try again later.\n", "text/plain", std::chrono::seconds(17)});
  Client client(transport, "test");
  Request request;
  request.path = "/api/v1/namespaces/a/configmaps/x";
  auto result = client.request_json(request);
  REQUIRE_FALSE(result);
  CHECK(result.error().reason == Reason::TooManyRequests);
  REQUIRE(result.error().retry_after);
  CHECK(*result.error().retry_after == std::chrono::seconds(17));
}

TEST_CASE("waiting for a CRD polls every 250 ms of the transport's clock until the timeout",
          "[kube][client]") {
  auto clock = std::make_shared<myop::testing::FakeClock>();
  clock->set_auto_advance(true);  // each wait jumps the clock to its end: no real time passes
  auto transport = std::make_shared<AbsentTransport>(clock);
  Client client(transport, "client-test");
  const auto start = clock->now();
  auto waited = client.wait_for_crd_established("things.example.com", std::chrono::seconds(1));
  REQUIRE_FALSE(waited.ok());
  CHECK(waited.error().reason == Reason::Timeout);
  CHECK_THAT(waited.error().message, Catch::Contains("it does not exist"));
  CHECK(transport->gets == 4);  // at 0, 250, 500 and 750 ms
  CHECK(clock->now() - start == std::chrono::seconds(1));
}
