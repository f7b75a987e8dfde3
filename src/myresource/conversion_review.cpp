#include "myresource/conversion_review.h"

#include <rapidjson/document.h>

#include "kube/object.h"
#include "myresource/conversion.h"

namespace myop::myresource {
namespace {

constexpr std::string_view kReviewApiVersion = "apiextensions.k8s.io/v1";

ConversionReviewAnswer bad_request(std::string reason) {
  ConversionReviewAnswer answer;
  answer.http_status = 400;
  answer.content_type = "text/plain; charset=utf-8";
  answer.failure = std::move(reason);
  answer.body = answer.failure + "\n";
  return answer;
}

std::string_view string_member(const kube::JsonValue& object, std::string_view key) {
  const auto* value = kube::find_member(object, key);
  return value != nullptr && value->IsString()
             ? std::string_view(value->GetString(), value->GetStringLength())
             : std::string_view();
}

// Where an object is, for a failure message: "web in team-a (object 3)".
std::string describe(const kube::JsonValue& object, rapidjson::SizeType index) {
  std::string where = "object " + std::to_string(index);
  if (!object.IsObject()) return where;
  const kube::ObjectView view(object);
  if (view.name().empty()) return where;
  std::string name(view.name());
  if (!view.namespace_name().empty()) name += " in " + std::string(view.namespace_name());
  return name + " (" + where + ")";
}

}  // namespace

ConversionReviewAnswer answer_conversion_review(std::string_view body) {
  auto parsed = kube::Object::parse(body);
  if (!parsed) return bad_request("the body is not JSON: " + parsed.error().message);
  const kube::JsonValue& review = parsed->json();
  if (!review.IsObject()) return bad_request("the body is not a ConversionReview object");
  if (string_member(review, "kind") != "ConversionReview" ||
      string_member(review, "apiVersion") != kReviewApiVersion)
    return bad_request("the body is not an apiextensions.k8s.io/v1 ConversionReview (kind \"" +
                       std::string(string_member(review, "kind")) + "\", apiVersion \"" +
                       std::string(string_member(review, "apiVersion")) + "\")");
  const auto* request = kube::find_member(review, "request");
  if (request == nullptr || !request->IsObject()) return bad_request("the ConversionReview has no request");
  const std::string_view uid = string_member(*request, "uid");
  if (uid.empty()) return bad_request("the ConversionReview's request has no uid");
  const std::string desired(string_member(*request, "desiredAPIVersion"));
  const auto* objects = kube::find_member(*request, "objects");
  if (objects != nullptr && !objects->IsArray())
    return bad_request("the ConversionReview's request.objects is not a list");

  ConversionReviewAnswer answer;
  answer.desired_api_version = desired;
  kube::Object out(kube::kLargestAutoChunkSize);
  auto& allocator = out.allocator();
  kube::JsonValue converted(rapidjson::kArrayType);
  if (desired != kApiVersionV1alpha1 && desired != kApiVersionV1beta1) {
    answer.failure = "cannot convert to \"" + desired + "\": this webhook converts MyResources between " +
                     std::string(kApiVersionV1alpha1) + " and " + std::string(kApiVersionV1beta1);
  } else if (objects != nullptr) {
    answer.objects = objects->Size();
    for (rapidjson::SizeType index = 0; index < objects->Size(); ++index) {
      auto result = convert_myresource((*objects)[index], desired);
      if (!result) {
        answer.failure = "cannot convert " + describe((*objects)[index], index) + " to " + desired + ": " +
                         result.error().message;
        break;
      }
      converted.PushBack(kube::deep_copy_value(result->json(), allocator), allocator);
    }
  }

  kube::JsonValue response(rapidjson::kObjectType);
  response.AddMember("uid", kube::json_string(uid, allocator), allocator);
  kube::JsonValue result(rapidjson::kObjectType);
  if (answer.failure.empty()) {
    result.AddMember("status", "Success", allocator);
    response.AddMember("convertedObjects", converted, allocator);
  } else {
    result.AddMember("status", "Failure", allocator);
    result.AddMember("message", kube::json_string(answer.failure, allocator), allocator);
    response.AddMember("convertedObjects", kube::JsonValue(rapidjson::kArrayType), allocator);
  }
  response.AddMember("result", result, allocator);
  auto& root = out.json();
  root.AddMember("apiVersion", kube::json_string(kReviewApiVersion, allocator), allocator);
  root.AddMember("kind", "ConversionReview", allocator);
  root.AddMember("response", response, allocator);
  answer.body = kube::to_json_string(root);
  return answer;
}

}  // namespace myop::myresource
