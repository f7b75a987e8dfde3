#include "kube/errors.h"

#include <array>

#include "kube/cbor.h"
#include "kube/json_parser.h"
#include "kube/protobuf.h"

namespace myop::kube {
namespace {

struct ReasonName {
  Reason reason;
  std::string_view name;
};

constexpr std::array<ReasonName, 16> kReasonNames{{
    {Reason::NotFound, "NotFound"},
    {Reason::AlreadyExists, "AlreadyExists"},
    {Reason::Conflict, "Conflict"},
    {Reason::Invalid, "Invalid"},
    {Reason::Forbidden, "Forbidden"},
    {Reason::Unauthorized, "Unauthorized"},
    {Reason::Gone, "Gone"},
    {Reason::TooManyRequests, "TooManyRequests"},
    {Reason::Timeout, "Timeout"},
    {Reason::ServiceUnavailable, "ServiceUnavailable"},
    {Reason::InternalError, "InternalError"},
    {Reason::BadRequest, "BadRequest"},
    {Reason::Transport, "Transport"},
    {Reason::Cancelled, "Cancelled"},
    {Reason::InvalidConfiguration, "InvalidConfiguration"},
    {Reason::Unknown, "Unknown"},
}};

// metav1.StatusReason values (k8s.io/apimachinery/pkg/apis/meta/v1/types.go) mapped onto ours. Reasons
// we don't list fall back to the HTTP code.
std::optional<Reason> reason_from_status_reason(std::string_view status_reason) {
  if (status_reason == "NotFound") return Reason::NotFound;
  if (status_reason == "AlreadyExists") return Reason::AlreadyExists;
  if (status_reason == "Conflict") return Reason::Conflict;
  if (status_reason == "Invalid") return Reason::Invalid;
  if (status_reason == "Forbidden") return Reason::Forbidden;
  if (status_reason == "Unauthorized") return Reason::Unauthorized;
  if (status_reason == "Gone" || status_reason == "Expired") return Reason::Gone;
  if (status_reason == "TooManyRequests") return Reason::TooManyRequests;
  if (status_reason == "Timeout" || status_reason == "ServerTimeout") return Reason::Timeout;
  if (status_reason == "ServiceUnavailable") return Reason::ServiceUnavailable;
  if (status_reason == "InternalError") return Reason::InternalError;
  if (status_reason == "BadRequest" || status_reason == "MethodNotAllowed" ||
      status_reason == "NotAcceptable" || status_reason == "RequestEntityTooLarge" ||
      status_reason == "UnsupportedMediaType")
    return Reason::BadRequest;
  return std::nullopt;
}

// What a person can do about it; appended to the server's words.
std::string_view hint(Reason reason) {
  switch (reason) {
    case Reason::Unauthorized:
      return "the API server rejected the credentials: check the token, token file, exec plugin or "
             "client certificate of the kubeconfig user (it may have expired)";
    case Reason::Forbidden:
      return "the user is authenticated but not allowed: grant the verb on the resource via RBAC";
    case Reason::Gone:
      return "the resourceVersion is too old (etcd was compacted): list again and watch from the new "
             "resourceVersion";
    case Reason::TooManyRequests:
      return "the API server is throttling this client (API Priority and Fairness or max-in-flight); "
             "set a client-side limit (--qps, --burst), lower --max-concurrent-reconciles, or retry later";
    case Reason::Conflict:
      return "the object changed since it was read: read it again and reapply the change";
    default:
      return {};
  }
}

void append_hint(Error& error) {
  std::string_view advice = hint(error.reason);
  // A server-side apply conflict is not a stale read: another manager owns the fields.
  for (const auto& cause : error.causes)
    if (cause.type == "FieldManagerConflict")
      advice =
          "another field manager owns these fields: leave them out of the applied object, or apply with "
          "force to take them over";
  if (advice.empty()) return;
  error.message += " (";
  error.message += advice;
  error.message += ")";
}

std::string string_member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto member = object.FindMember(name);
  if (member == object.MemberEnd() || !member->value.IsString()) return {};
  return std::string(member->value.GetString(), member->value.GetStringLength());
}

std::string quote_body(std::string_view body) {
  constexpr std::size_t kLimit = 256;
  std::string quoted(body.substr(0, kLimit));
  for (char& c : quoted)
    if (c == '\n' || c == '\r') c = ' ';
  if (body.size() > kLimit) quoted += "...";
  return quoted;
}

}  // namespace

std::string_view reason_name(Reason reason) {
  for (const auto& entry : kReasonNames)
    if (entry.reason == reason) return entry.name;
  return "Unknown";
}

Reason reason_from_http_code(int http_code) {
  switch (http_code) {
    case 400:
    case 405:
    case 406:
    case 413:
    case 415:
      return Reason::BadRequest;
    case 401:
      return Reason::Unauthorized;
    case 403:
      return Reason::Forbidden;
    case 404:
      return Reason::NotFound;
    case 409:
      return Reason::Conflict;
    case 410:
      return Reason::Gone;
    case 422:
      return Reason::Invalid;
    case 429:
      return Reason::TooManyRequests;
    case 500:
      return Reason::InternalError;
    case 503:
      return Reason::ServiceUnavailable;
    case 504:
      return Reason::Timeout;
    default:
      return Reason::Unknown;
  }
}

Error make_error(Reason reason, std::string message, int http_code) {
  Error error;
  error.reason = reason;
  error.message = std::move(message);
  error.http_code = http_code;
  return error;
}

std::string Error::to_string() const {
  std::string text(reason_name(reason));
  if (http_code != 0) text += " (HTTP " + std::to_string(http_code) + ")";
  text += ": ";
  text += message;
  if (!causes.empty()) {
    text += "; causes:";
    for (const auto& cause : causes) {
      text += " [";
      if (!cause.field.empty()) text += cause.field + ": ";
      text += cause.message.empty() ? cause.type : cause.message;
      text += "]";
    }
  }
  return text;
}

Error error_from_status(const rapidjson::Value& status, int http_code) {
  Error error;
  int code = http_code;
  if (status.IsObject()) {
    auto code_member = status.FindMember("code");
    if (code_member != status.MemberEnd() && code_member->value.IsInt()) code = code_member->value.GetInt();
  }
  error.http_code = code;
  error.status_reason = string_member(status, "reason");
  error.reason = reason_from_status_reason(error.status_reason).value_or(reason_from_http_code(code));
  // 409 AlreadyExists carries reason AlreadyExists; a bare 409 without a reason is a Conflict.
  error.message = string_member(status, "message");

  if (status.IsObject()) {
    auto details = status.FindMember("details");
    if (details != status.MemberEnd() && details->value.IsObject()) {
      const auto& value = details->value;
      error.kind = string_member(value, "kind");
      error.group = string_member(value, "group");
      error.name = string_member(value, "name");
      auto retry = value.FindMember("retryAfterSeconds");
      if (retry != value.MemberEnd() && retry->value.IsInt() && retry->value.GetInt() > 0)
        error.retry_after = std::chrono::seconds(retry->value.GetInt());
      auto causes = value.FindMember("causes");
      if (causes != value.MemberEnd() && causes->value.IsArray()) {
        for (const auto& item : causes->value.GetArray()) {
          error.causes.push_back(Cause{string_member(item, "reason"), string_member(item, "message"),
                                       string_member(item, "field")});
        }
      }
    }
  }

  if (error.message.empty()) {
    error.message = "the API server answered " + std::string(reason_name(error.reason));
    if (!error.name.empty()) error.message += " for " + error.kind + " \"" + error.name + "\"";
  }
  append_hint(error);
  return error;
}

Error error_from_response(int http_code, std::string_view body) {
  // A Status is one small object; anything larger or malformed is quoted below instead. A request that
  // accepted protobuf or CBOR gets its Status in that encoding (each starts with its magic).
  auto document = body.starts_with(std::string_view("k8s\0", 4)) ? decode_protobuf_document(body)
                  : body.starts_with("\xd9\xd9\xf7")             ? decode_cbor_document(body)
                                                                 : parse_json_document(body, JsonLimits{});
  if (document && document->IsObject() && string_member(document.value(), "kind") == "Status") {
    return error_from_status(document.value(), http_code);
  }
  Error error;
  error.http_code = http_code;
  error.reason = reason_from_http_code(http_code);
  error.message = "the API server answered HTTP " + std::to_string(http_code);
  if (!body.empty()) error.message += " with a body that is not a metav1.Status: " + quote_body(body);
  append_hint(error);
  return error;
}

}  // namespace myop::kube
