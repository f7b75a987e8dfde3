#include "kube/errors.h"

#include <catch2/catch.hpp>

#include <string>

#include "kube/json_parser.h"

using myop::kube::Error;
using myop::kube::kMaximumObjectJsonBytes;
using myop::kube::Reason;
using myop::kube::Result;

TEST_CASE("a Conflict Status body becomes a Conflict error with the server's message", "[kube][errors]") {
  const std::string body = R"json({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again",
    "reason":"Conflict","details":{"name":"a","kind":"configmaps"},"code":409})json";
  Error error = myop::kube::error_from_response(409, body);
  CHECK(error.reason == Reason::Conflict);
  CHECK(myop::kube::is_conflict(error));
  CHECK(error.http_code == 409);
  CHECK(error.name == "a");
  CHECK(error.kind == "configmaps");
  CHECK(error.message.find("the object has been modified") != std::string::npos);
  CHECK(error.to_string().rfind("Conflict (HTTP 409): ", 0) == 0);
}

TEST_CASE("AlreadyExists is told apart from Conflict although both are 409", "[kube][errors]") {
  Error error = myop::kube::error_from_response(
      409,
      R"json({"kind":"Status","status":"Failure","reason":"AlreadyExists","message":"configmaps \"a\" already exists","code":409})json");
  CHECK(error.reason == Reason::AlreadyExists);
}

TEST_CASE("Invalid keeps every cause with its field", "[kube][errors]") {
  const std::string body = R"json({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"MyResource.myorg.io \"x\" is invalid: spec.image: Required value","reason":"Invalid",
    "details":{"name":"x","group":"myorg.io","kind":"MyResource","causes":[
      {"reason":"FieldValueRequired","message":"Required value","field":"spec.image"},
      {"reason":"FieldValueInvalid","message":"must be <= 1000","field":"spec.replicas"}]},"code":422})json";
  Error error = myop::kube::error_from_response(422, body);
  REQUIRE(error.reason == Reason::Invalid);
  REQUIRE(error.causes.size() == 2);
  CHECK(error.causes[0].type == "FieldValueRequired");
  CHECK(error.causes[0].field == "spec.image");
  CHECK(error.causes[1].message == "must be <= 1000");
  CHECK(error.group == "myorg.io");
  CHECK(error.to_string().find("spec.replicas: must be <= 1000") != std::string::npos);
}

TEST_CASE("Expired and Gone both mean relist", "[kube][errors]") {
  Error expired = myop::kube::error_from_response(
      410,
      R"json({"kind":"Status","status":"Failure","reason":"Expired","message":"too old resource version: 1 (200)","code":410})json");
  CHECK(expired.reason == Reason::Gone);
  CHECK(expired.status_reason == "Expired");
  CHECK(expired.message.find("list again") != std::string::npos);
  Error gone =
      myop::kube::error_from_response(410, R"json({"kind":"Status","reason":"Gone","code":410})json");
  CHECK(myop::kube::is_gone(gone));
}

TEST_CASE("TooManyRequests carries retryAfterSeconds", "[kube][errors]") {
  Error error = myop::kube::error_from_response(
      429,
      R"json({"kind":"Status","status":"Failure","reason":"TooManyRequests","message":"Too many requests, please try again later.","details":{"retryAfterSeconds":3},"code":429})json");
  CHECK(error.reason == Reason::TooManyRequests);
  REQUIRE(error.retry_after.has_value());
  CHECK(error.retry_after->count() == 3);
}

TEST_CASE("a body that is not a Status still maps by HTTP code and quotes the body", "[kube][errors]") {
  SECTION("empty 401") {
    Error error = myop::kube::error_from_response(401, "");
    CHECK(error.reason == Reason::Unauthorized);
    CHECK(error.message.find("credentials") != std::string::npos);
  }
  SECTION("HTML from a proxy") {
    Error error = myop::kube::error_from_response(503, "<html>\n<body>upstream down</body></html>");
    CHECK(error.reason == Reason::ServiceUnavailable);
    CHECK(error.message.find("upstream down") != std::string::npos);
    CHECK(error.message.find('\n') == std::string::npos);
  }
  SECTION("unknown code") { CHECK(myop::kube::error_from_response(418, "teapot").reason == Reason::Unknown); }
}

TEST_CASE("HTTP codes map onto reasons", "[kube][errors]") {
  using myop::kube::reason_from_http_code;
  CHECK(reason_from_http_code(400) == Reason::BadRequest);
  CHECK(reason_from_http_code(403) == Reason::Forbidden);
  CHECK(reason_from_http_code(404) == Reason::NotFound);
  CHECK(reason_from_http_code(415) == Reason::BadRequest);
  CHECK(reason_from_http_code(500) == Reason::InternalError);
  CHECK(reason_from_http_code(504) == Reason::Timeout);
}

TEST_CASE("a Status object from a watch ERROR event is parsed too", "[kube][errors]") {
  rapidjson::Document status;
  status.Parse(
      R"json({"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (99)","reason":"Expired","code":410})json");
  Error error = myop::kube::error_from_status(status);
  CHECK(error.reason == Reason::Gone);
  CHECK(error.http_code == 410);
}

TEST_CASE("ServerTimeout counts as Timeout", "[kube][errors]") {
  Error error = myop::kube::error_from_response(
      500,
      R"json({"kind":"Status","reason":"ServerTimeout","message":"The list operation could not be completed at this time, please try again.","code":500})json");
  CHECK(error.reason == Reason::Timeout);
}

TEST_CASE("kube::Result (base::Result with a kube::Error) holds a value or an Error", "[kube][errors]") {
  Result<int> good = 5;
  REQUIRE(good.ok());
  CHECK(*good == 5);
  Result<int> bad = myop::kube::make_error(Reason::NotFound, "no such thing", 404);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().http_code == 404);
  CHECK_THROWS(bad.value());
  Result<void> done;
  CHECK(done.ok());
  Result<void> failed = myop::kube::make_error(Reason::Cancelled, "stopped");
  CHECK(myop::kube::is_cancelled(failed.error()));
}

TEST_CASE("a server-side apply conflict advises force, not a re-read", "[kube][errors]") {
  Error error = myop::kube::error_from_response(
      409, R"json({"kind":"Status","status":"Failure","reason":"Conflict","code":409,
        "message":"Apply failed with 1 conflict: conflict with \"manager-a\": .data.owned",
        "details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"manager-a\"","field":".data.owned"}]}})json");
  CHECK(error.reason == Reason::Conflict);
  CHECK(error.message.find("force") != std::string::npos);
  CHECK(error.message.find("read it again") == std::string::npos);
}

TEST_CASE("an error body nested too deep or too large is quoted, not parsed", "[kube][errors]") {
  const Error deep = myop::kube::error_from_response(500, std::string(100'000, '['));
  CHECK(deep.reason == Reason::InternalError);
  CHECK(deep.message.find("not a metav1.Status") != std::string::npos);

  const std::string large =
      R"({"kind":"Status","message":")" + std::string(kMaximumObjectJsonBytes, 'x') + R"("})";
  const Error too_large = myop::kube::error_from_response(403, large);
  CHECK(too_large.reason == Reason::Forbidden);
  CHECK(too_large.message.find("not a metav1.Status") != std::string::npos);
  CHECK(too_large.message.size() < 1000);
}
