// runtime/http/metrics_authorizer: who may scrape /metrics. No bearer token -> 401, a token the
// TokenReview does not authenticate -> 401, authenticated but not allowed by the
// SubjectAccessReview -> 403, allowed -> 200, the API server unreachable -> 500 (never cached).
// Answers are cached by token hash for their TTL. The Kubernetes reviewer sends the TokenReview
// and SubjectAccessReview controller-runtime's filter sends, and reads their answers.
#include <rapidjson/document.h>
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <set>

#include "kube/client.h"
#include "runtime/http/metrics_authorizer.h"

using namespace myop;
using namespace myop::runtime;

namespace {

class FakeReviewer final : public AccessReviewer {
 public:
  std::map<std::string, AuthenticatedUser> users;  // token -> user
  std::set<std::string> allowed;                   // "user verb path"
  bool unreachable = false;
  int token_reviews = 0;
  int access_reviews = 0;

  kube::Result<std::optional<AuthenticatedUser>> review_token(std::string_view token) override {
    ++token_reviews;
    if (unreachable) return kube::make_error(kube::Reason::Transport, "connection refused");
    const auto user = users.find(std::string(token));
    if (user == users.end()) return std::optional<AuthenticatedUser>();
    return std::optional<AuthenticatedUser>(user->second);
  }
  kube::Result<bool> review_access(const AuthenticatedUser& user, std::string_view verb,
                                   std::string_view path) override {
    ++access_reviews;
    return allowed.count(user.name + " " + std::string(verb) + " " + std::string(path)) == 1;
  }
};

struct Fixture {
  std::shared_ptr<FakeReviewer> reviewer = std::make_shared<FakeReviewer>();
  std::chrono::steady_clock::time_point now{};
  MetricsAuthorizer authorizer{reviewer, MetricsAuthorizerOptions{}, [this] { return now; }};

  Fixture() {
    reviewer->users["prometheus-token"] = {
        "system:serviceaccount:monitoring:prometheus", "uid-1", {"system:serviceaccounts"}, {}};
    reviewer->users["intruder-token"] = {"system:serviceaccount:default:default", "uid-2", {}, {}};
    reviewer->allowed.insert("system:serviceaccount:monitoring:prometheus get /metrics");
  }
};

// A transport that records requests and answers from a queue.
class RecordingTransport final : public kube::Transport {
 public:
  std::vector<kube::Request> requests;
  std::deque<kube::Response> answers;
  kube::Result<kube::Response> send(const kube::Request& request, std::stop_token) override {
    requests.push_back(request);
    if (answers.empty()) return kube::make_error(kube::Reason::Transport, "no answer queued");
    kube::Response response = answers.front();
    answers.pop_front();
    return response;
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler&, std::stop_token,
                                       const kube::StreamOptions&) override {
    return kube::make_error(kube::Reason::BadRequest, "not used");
  }
  const std::string& host() const override { return host_; }

 private:
  std::string host_ = "127.0.0.1:6443";
};

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document document;
  document.Parse(json.c_str());
  REQUIRE_FALSE(document.HasParseError());
  return document;
}

}  // namespace

TEST_CASE("security: bearer tokens are read from the Authorization header", "[security][metrics]") {
  CHECK(bearer_token("Bearer abc.def") == std::optional<std::string_view>("abc.def"));
  CHECK(bearer_token("bearer abc") == std::optional<std::string_view>("abc"));
  CHECK(bearer_token("  Bearer   abc  ") == std::optional<std::string_view>("abc"));
  CHECK_FALSE(bearer_token(""));
  CHECK_FALSE(bearer_token("Bearer"));
  CHECK_FALSE(bearer_token("Bearer "));
  CHECK_FALSE(bearer_token("Basic dXNlcjpwYXNz"));
  CHECK_FALSE(bearer_token("Bearerabc"));
  CHECK_FALSE(bearer_token("Bearer a b"));
}

TEST_CASE("security: a scrape without a token is 401 and asks nobody", "[security][metrics]") {
  Fixture fixture;
  const auto result = fixture.authorizer.authorize("", "get", "/metrics");
  CHECK(result.decision == ScrapeDecision::Unauthenticated);
  CHECK(result.http_status == 401);
  CHECK(fixture.reviewer->token_reviews == 0);
}

TEST_CASE("security: an unknown token is 401, a token without the role 403, with the role 200",
          "[security][metrics]") {
  Fixture fixture;
  const auto unknown = fixture.authorizer.authorize("Bearer forged", "get", "/metrics");
  CHECK(unknown.http_status == 401);
  CHECK(unknown.message.find("forged") == std::string::npos);  // never echo a token

  const auto intruder = fixture.authorizer.authorize("Bearer intruder-token", "get", "/metrics");
  CHECK(intruder.decision == ScrapeDecision::Forbidden);
  CHECK(intruder.http_status == 403);
  CHECK(intruder.user == "system:serviceaccount:default:default");

  const auto prometheus = fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics");
  CHECK(prometheus.decision == ScrapeDecision::Allowed);
  CHECK(prometheus.http_status == 200);
  CHECK(prometheus.user == "system:serviceaccount:monitoring:prometheus");

  // The role covers get on /metrics only.
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/debug/pprof").http_status == 403);
}

TEST_CASE("security: answers are cached for their TTL, by token, verb and path", "[security][metrics]") {
  Fixture fixture;
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 200);
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 200);
  CHECK(fixture.reviewer->token_reviews == 1);
  CHECK(fixture.reviewer->access_reviews == 1);

  // Access taken away: still allowed until the cached answer expires, then refused.
  fixture.reviewer->allowed.clear();
  fixture.now += std::chrono::seconds(119);
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 200);
  fixture.now += std::chrono::seconds(2);
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 403);
  CHECK(fixture.reviewer->token_reviews == 2);

  // A refusal is cached for the shorter denied TTL.
  fixture.reviewer->allowed.insert("system:serviceaccount:monitoring:prometheus get /metrics");
  fixture.now += std::chrono::seconds(29);
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 403);
  fixture.now += std::chrono::seconds(2);
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 200);
}

TEST_CASE("security: an unreachable API server gives 500 and is asked again next time",
          "[security][metrics]") {
  Fixture fixture;
  fixture.reviewer->unreachable = true;
  const auto result = fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics");
  CHECK(result.decision == ScrapeDecision::Unavailable);
  CHECK(result.http_status == 500);
  CHECK(result.message.find("connection refused") != std::string::npos);
  fixture.reviewer->unreachable = false;
  CHECK(fixture.authorizer.authorize("Bearer prometheus-token", "get", "/metrics").http_status == 200);
  CHECK(fixture.reviewer->token_reviews == 2);
}

TEST_CASE("security: the Kubernetes reviewer sends a TokenReview and a SubjectAccessReview",
          "[security][metrics]") {
  auto transport = std::make_shared<RecordingTransport>();
  auto client = std::make_shared<kube::Client>(transport, "metrics-authorizer-test");
  KubeAccessReviewer reviewer(client, {"https://kubernetes.default.svc"});

  transport->answers.push_back({201,
                                R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{
                                   "authenticated":true,"audiences":["https://kubernetes.default.svc"],
                                   "user":{"username":"system:serviceaccount:monitoring:prometheus","uid":"u-1",
                                   "groups":["system:serviceaccounts","system:authenticated"],
                                   "extra":{"authentication.kubernetes.io/pod-name":["prometheus-0"]}}}})",
                                "application/json"});
  auto user = reviewer.review_token("the-token");
  REQUIRE(user.ok());
  REQUIRE(user->has_value());
  CHECK((*user)->name == "system:serviceaccount:monitoring:prometheus");
  CHECK((*user)->uid == "u-1");
  CHECK((*user)->groups.size() == 2);
  CHECK((*user)->extra.at("authentication.kubernetes.io/pod-name") ==
        std::vector<std::string>{"prometheus-0"});
  REQUIRE(transport->requests.size() == 1);
  CHECK(transport->requests[0].method == "POST");
  CHECK(transport->requests[0].path == "/apis/authentication.k8s.io/v1/tokenreviews");
  const auto token_review = parse(transport->requests[0].body);
  CHECK(std::string(token_review["kind"].GetString()) == "TokenReview");
  CHECK(std::string(token_review["spec"]["token"].GetString()) == "the-token");
  CHECK(std::string(token_review["spec"]["audiences"][0].GetString()) == "https://kubernetes.default.svc");

  transport->answers.push_back(
      {201, R"({"kind":"SubjectAccessReview","status":{"allowed":true}})", "application/json"});
  auto allowed = reviewer.review_access(**user, "get", "/metrics");
  REQUIRE(allowed.ok());
  CHECK(*allowed);
  REQUIRE(transport->requests.size() == 2);
  CHECK(transport->requests[1].path == "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  const auto access_review = parse(transport->requests[1].body);
  CHECK(std::string(access_review["spec"]["user"].GetString()) ==
        "system:serviceaccount:monitoring:prometheus");
  CHECK(std::string(access_review["spec"]["uid"].GetString()) == "u-1");
  CHECK(access_review["spec"]["groups"].Size() == 2);
  CHECK(std::string(access_review["spec"]["nonResourceAttributes"]["path"].GetString()) == "/metrics");
  CHECK(std::string(access_review["spec"]["nonResourceAttributes"]["verb"].GetString()) == "get");
  CHECK(access_review["spec"]["extra"].HasMember("authentication.kubernetes.io/pod-name"));

  // Not authenticated, denied, and a server error.
  transport->answers.push_back(
      {201, R"({"status":{"authenticated":false,"error":"token expired"}})", "application/json"});
  auto expired = reviewer.review_token("old");
  REQUIRE(expired.ok());
  CHECK_FALSE(expired->has_value());
  transport->answers.push_back(
      {201, R"({"status":{"allowed":false,"reason":"no RBAC"}})", "application/json"});
  auto denied = reviewer.review_access(**user, "get", "/metrics");
  REQUIRE(denied.ok());
  CHECK_FALSE(*denied);
  transport->answers.push_back(
      {403, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,
              "message":"tokenreviews.authentication.k8s.io is forbidden"})",
       "application/json"});
  auto forbidden = reviewer.review_token("x");
  REQUIRE_FALSE(forbidden.ok());
  CHECK(forbidden.error().reason == kube::Reason::Forbidden);
}

TEST_CASE(
    "security: the RBAC verb of a /metrics request is the lower-cased HTTP method, as the API server names "
    "it "
    "for non-resource URLs",
    "[security][metrics]") {
  CHECK(non_resource_verb("GET") == "get");
  // Non-resource requests: RequestInfo keeps strings.ToLower(method); only resource requests map
  // HEAD to get. A role with verbs [get] on /metrics does not allow HEAD on the API server either.
  CHECK(non_resource_verb("HEAD") == "head");
  CHECK(non_resource_verb("POST") == "post");
  CHECK(non_resource_verb("get") == "get");
}
