// The conversion webhook's protocol: an apiextensions.k8s.io/v1 ConversionReview in, the same review with
// its response out, every object converted by convert_myresource (conversion.h). Pure: text in, status
// and text out, so the whole exchange is unit-tested; runtime/webhook_server serves it over HTTPS.
//
// The API server's rules, kept here: the response carries the request's uid; convertedObjects has one
// object per request object, in order, each of desiredAPIVersion; one object that cannot be converted
// fails the whole review (result.status "Failure" with a message naming the object), never a partial
// answer. A body that is not a v1 ConversionReview with a request is HTTP 400 with the reason, as
// controller-runtime's webhook answers it.
#pragma once

#include <string>
#include <string_view>

namespace myop::myresource {

struct ConversionReviewAnswer {
  unsigned http_status = 200;
  std::string content_type = "application/json";
  std::string body;
  // For the log and metrics: how many objects, to what version, and the failure if any.
  std::size_t objects = 0;
  std::string desired_api_version;
  std::string failure;  // empty on success
};

ConversionReviewAnswer answer_conversion_review(std::string_view body);

}  // namespace myop::myresource
