// The conversion webhook's protocol (src/myresource/conversion_review.h): a ConversionReview answered
// with every object converted in order and the request's uid, one bad object failing the whole review,
// and a body that is not a review refused with 400.
#include "myresource/conversion_review.h"

#include <catch2/catch.hpp>
#include <string>

#include "kube/object.h"

using namespace myop;
using namespace myop::myresource;

namespace {

std::string alpha(const std::string& name, const std::string& annotations) {
  return R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":")" + name +
         R"(","namespace":"team-a","uid":"u-)" + name + R"(","annotations":{)" + annotations +
         R"(}},"spec":{"image":"nginx:1.27","replicas":2}})";
}

std::string review(const std::string& desired, const std::string& objects, const std::string& uid = "r-1") {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":")" + uid +
         R"(","desiredAPIVersion":")" + desired + R"(","objects":[)" + objects + "]}}";
}

kube::Object parsed(const ConversionReviewAnswer& answer) {
  INFO(answer.body);
  auto object = kube::Object::parse(answer.body);
  REQUIRE(object.ok());
  return std::move(object).value();
}

std::string text_at(const kube::Object& object, std::initializer_list<std::string_view> path) {
  const auto* value = object.view().find(path);
  return value != nullptr && value->IsString() ? std::string(value->GetString()) : std::string("(absent)");
}

}  // namespace

TEST_CASE("a review gets every object converted, in order, under the request's uid",
          "[myresource][conversion_review]") {
  const auto answer = answer_conversion_review(
      review("myorg.io/v1beta1",
             alpha("web", R"("myorg.io/canary":"true","myorg.io/targetVersion":"1.28")") + "," +
                 alpha("api", R"("note":"kept")"),
             "7f0c-uid"));
  CHECK(answer.http_status == 200);
  CHECK(answer.failure.empty());
  CHECK(answer.objects == 2);
  CHECK(answer.desired_api_version == "myorg.io/v1beta1");
  const auto body = parsed(answer);
  CHECK(text_at(body, {"apiVersion"}) == "apiextensions.k8s.io/v1");
  CHECK(text_at(body, {"kind"}) == "ConversionReview");
  CHECK(text_at(body, {"response", "uid"}) == "7f0c-uid");
  CHECK(text_at(body, {"response", "result", "status"}) == "Success");
  const auto& converted = *body.view().find({"response", "convertedObjects"});
  REQUIRE(converted.Size() == 2);
  const kube::ObjectView web(converted[0]);
  const kube::ObjectView api(converted[1]);
  CHECK(web.api_version() == "myorg.io/v1beta1");
  CHECK(web.name() == "web");
  CHECK(web.find({"spec", "canary", "enabled"})->GetBool());
  CHECK(std::string(web.find({"spec", "canary", "targetVersion"})->GetString()) == "1.28");
  CHECK_FALSE(web.annotation("myorg.io/canary"));
  CHECK(api.name() == "api");
  CHECK(api.api_version() == "myorg.io/v1beta1");
  CHECK(api.annotation("note") == "kept");
}

TEST_CASE("a review with no objects is answered with none", "[myresource][conversion_review]") {
  const auto answer = answer_conversion_review(review("myorg.io/v1alpha1", ""));
  CHECK(answer.http_status == 200);
  const auto body = parsed(answer);
  CHECK(text_at(body, {"response", "result", "status"}) == "Success");
  CHECK(body.view().find({"response", "convertedObjects"})->Size() == 0);
}

TEST_CASE("one object that cannot be converted fails the whole review and is named",
          "[myresource][conversion_review]") {
  // metadata.annotations with a value that is not a string: no API server stores that.
  const std::string bad =
      R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"broken","namespace":"team-b",)"
      R"("annotations":{"myorg.io/canary":7}},"spec":{"image":"nginx"}})";
  const auto answer = answer_conversion_review(review("myorg.io/v1beta1", alpha("web", "") + "," + bad));
  CHECK(answer.http_status == 200);  // the protocol's failure, not HTTP's
  CHECK_THAT(answer.failure, Catch::Contains("broken in team-b (object 1)"));
  const auto body = parsed(answer);
  CHECK(text_at(body, {"response", "uid"}) == "r-1");
  CHECK(text_at(body, {"response", "result", "status"}) == "Failure");
  CHECK_THAT(text_at(body, {"response", "result", "message"}), Catch::Contains("broken in team-b"));
  CHECK(body.view().find({"response", "convertedObjects"})->Size() == 0);
}

TEST_CASE("a version this webhook does not convert to fails the review and names both it knows",
          "[myresource][conversion_review]") {
  const auto answer = answer_conversion_review(review("myorg.io/v2", alpha("web", "")));
  CHECK(answer.http_status == 200);
  const auto body = parsed(answer);
  CHECK(text_at(body, {"response", "result", "status"}) == "Failure");
  CHECK_THAT(text_at(body, {"response", "result", "message"}), Catch::Contains("myorg.io/v2") &&
                                                                   Catch::Contains("myorg.io/v1alpha1") &&
                                                                   Catch::Contains("myorg.io/v1beta1"));
}

TEST_CASE("a body that is not a v1 ConversionReview with a request is 400 with the reason",
          "[myresource][conversion_review]") {
  struct Case {
    std::string body;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"", "not JSON"},
      {"{\"kind\":", "not JSON"},
      {"[]", "not a ConversionReview object"},
      {R"({"apiVersion":"v1","kind":"Pod"})", "kind \"Pod\""},
      {R"({"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"uid":"x"}})",
       "apiVersion \"apiextensions.k8s.io/v1beta1\""},
      {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"})", "has no request"},
      {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"myorg.io/v1beta1"}})",
       "no uid"},
      {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"x","objects":{}}})",
       "not a list"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    const auto answer = answer_conversion_review(c.body);
    CHECK(answer.http_status == 400);
    CHECK_THAT(answer.body, Catch::Contains(c.reason));
    CHECK(answer.failure == answer.body.substr(0, answer.body.size() - 1));
  }
}
