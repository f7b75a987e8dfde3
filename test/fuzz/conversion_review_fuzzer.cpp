// libFuzzer target: the conversion webhook's whole answer to a request body (what anyone who reaches
// the webhook port can send), myresource::answer_conversion_review, and the conversion behind it.
//
// Input: the body of a POST /convert. Beyond "no crash, no sanitizer report, no hang" it checks what
// the API server relies on (src/myresource/conversion_review.h):
//   - the answer is 200 with a v1 ConversionReview, or 400 with a reason; nothing else,
//   - a 200 carries the request's uid, and either Success with one object per request object, in
//     order, each of the desired apiVersion, or Failure with a message and no object,
//   - conversion is lossless: each converted object converted back to its own version is the object
//     that was sent (canonical JSON), as src/myresource/conversion.h promises, for objects that do not
//     carry its reserved annotations themselves (those are read as values kept by an earlier
//     conversion, and consumed).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "kube/canonical_json.h"
#include "kube/object.h"
#include "myresource/conversion.h"
#include "myresource/conversion_review.h"

namespace {

using myop::kube::JsonValue;

// A property failed: crash so that libFuzzer keeps the input.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

std::string_view text(const JsonValue* value) {
  return value != nullptr && value->IsString()
             ? std::string_view(value->GetString(), value->GetStringLength())
             : std::string_view();
}

// JSON with a member name twice in one object has no single meaning (the API server never sends it):
// round trips are not checked on it.
bool has_duplicate_member_names(const JsonValue& value) {
  if (value.IsArray()) {
    for (const auto& element : value.GetArray()) {
      if (has_duplicate_member_names(element)) return true;
    }
    return false;
  }
  if (!value.IsObject()) return false;
  std::vector<std::string_view> names;
  for (const auto& member : value.GetObject()) {
    const std::string_view name(member.name.GetString(), member.name.GetStringLength());
    for (const auto& seen : names) {
      if (seen == name) return true;
    }
    names.push_back(name);
    if (has_duplicate_member_names(member.value)) return true;
  }
  return false;
}

// Whether the object carries one of the conversion's reserved annotations.
bool carries_kept_values(const JsonValue& object) {
  const JsonValue* metadata = myop::kube::find_member(object, "metadata");
  const JsonValue* annotations =
      metadata != nullptr ? myop::kube::find_member(*metadata, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->IsObject()) return false;
  return myop::kube::find_member(*annotations, myop::myresource::kV1alpha1ValuesAnnotation) != nullptr ||
         myop::kube::find_member(*annotations, myop::myresource::kV1beta1ValuesAnnotation) != nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto answer = myop::myresource::answer_conversion_review(body);

  if (answer.http_status == 400) {
    require(!answer.failure.empty());
    require(answer.body == answer.failure + "\n");
    return 0;
  }
  require(answer.http_status == 200);
  require(answer.content_type == "application/json");

  // The answer is a ConversionReview for the request's uid.
  auto request = myop::kube::Object::parse(body);
  require(request.ok());
  // The request parser takes a lone low-surrogate escape (\udc00 to \udfff), which decodes to bytes
  // that are not UTF-8 (the API server never sends one). Such a request is held to the answer's shape
  // only; every other one must get an answer that is valid UTF-8 JSON, and lossless conversions.
  const bool valid_unicode = myop::kube::Object::parse(myop::kube::to_json_string(request->json())).ok();
  rapidjson::Document response;
  response.Parse<rapidjson::kParseIterativeFlag>(answer.body.data(), answer.body.size());
  require(!response.HasParseError());
  if (valid_unicode) require(myop::kube::Object::parse(answer.body).ok());
  const JsonValue& review = response;
  require(text(myop::kube::find_member(review, "apiVersion")) == "apiextensions.k8s.io/v1");
  require(text(myop::kube::find_member(review, "kind")) == "ConversionReview");
  const JsonValue* asked = myop::kube::find_member(request->json(), "request");
  const JsonValue* answered = myop::kube::find_member(review, "response");
  require(asked != nullptr && answered != nullptr && answered->IsObject());
  require(text(myop::kube::find_member(*answered, "uid")) == text(myop::kube::find_member(*asked, "uid")));
  const JsonValue* result = myop::kube::find_member(*answered, "result");
  const JsonValue* converted = myop::kube::find_member(*answered, "convertedObjects");
  require(result != nullptr && converted != nullptr && converted->IsArray());
  const std::string_view status = text(myop::kube::find_member(*result, "status"));
  if (status == "Failure") {
    require(!answer.failure.empty());
    require(text(myop::kube::find_member(*result, "message")) == answer.failure);
    require(converted->Empty());
    return 0;
  }
  require(status == "Success");
  require(answer.failure.empty());

  // One object per request object, in order, each of the desired version, and each converts back.
  const JsonValue* objects = myop::kube::find_member(*asked, "objects");
  const std::size_t count = objects != nullptr ? objects->Size() : 0;
  require(converted->Size() == count);
  require(answer.objects == count);
  const std::string_view desired = text(myop::kube::find_member(*asked, "desiredAPIVersion"));
  for (std::size_t index = 0; index < count; ++index) {
    const JsonValue& sent = (*objects)[static_cast<rapidjson::SizeType>(index)];
    const JsonValue& got = (*converted)[static_cast<rapidjson::SizeType>(index)];
    require(text(myop::kube::find_member(got, "apiVersion")) == desired);
    if (!valid_unicode || has_duplicate_member_names(sent) || carries_kept_values(sent)) continue;
    // In memory: the answer's text goes through a number parser that is not exact for doubles (a
    // value can move by one unit in the last place when read back), which is not the conversion's
    // doing.
    const std::string_view original = text(myop::kube::find_member(sent, "apiVersion"));
    auto there = myop::myresource::convert_myresource(sent, desired);
    require(there.ok());
    auto back = myop::myresource::convert_myresource(there->json(), original);
    require(back.ok());
    require(myop::kube::canonical_equal(back->json(), sent));
  }
  return 0;
}
