// Errors as values for everything that talks to the API server.
//
// An API error arrives as a metav1.Status body; a transport error (DNS, TCP, TLS) never reaches the
// server. Both become an `Error` with a reason the caller can branch on and a message a person can act
// on. `Result<T>` (base::Result<T, Error>) carries either a value or an Error across module
// boundaries; nothing in src/kube/ throws to its callers.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace myop::kube {

enum class Reason {
  NotFound,              // 404
  AlreadyExists,         // 409 on create
  Conflict,              // 409 on a stale resourceVersion or an apply conflict
  Invalid,               // 422; see Error::causes
  Forbidden,             // 403: RBAC or admission said no
  Unauthorized,          // 401: credentials missing, expired or rejected
  Gone,                  // 410 (Status reason Gone or Expired): the resourceVersion is too old; relist
  TooManyRequests,       // 429: client or API Priority and Fairness throttling
  Timeout,               // 504, Status reason Timeout/ServerTimeout, or a client-side deadline
  ServiceUnavailable,    // 503
  InternalError,         // 500
  BadRequest,            // 400, 405, 406, 413, 415: the request itself is wrong
  Transport,             // connection refused/reset, DNS, TLS handshake or verification
  Cancelled,             // the caller cancelled
  InvalidConfiguration,  // kubeconfig / in-cluster configuration cannot be used
  Unknown,
};

// "NotFound", "Conflict", ... as written in metav1.Status.reason (Gone for both Gone and Expired).
std::string_view reason_name(Reason reason);

// One entry of metav1.Status.details.causes (why a 422 Invalid or an apply conflict happened).
struct Cause {
  std::string type;     // e.g. FieldValueRequired, FieldManagerConflict
  std::string message;  // e.g. Required value
  std::string field;    // e.g. spec.image, or .metadata.labels.x for apply conflicts
};

struct Error {
  Reason reason = Reason::Unknown;
  int http_code = 0;          // 0 when the request never got an HTTP answer
  std::string message;        // what happened and, where we know it, what to do about it
  std::string status_reason;  // metav1.Status.reason exactly as the server sent it ("Expired", ...)
  std::vector<Cause> causes;
  std::optional<std::chrono::seconds> retry_after;  // details.retryAfterSeconds or Retry-After
  std::string kind;  // details.kind / group / name, when the server named the object
  std::string group;
  std::string name;
  // True when the request certainly never reached the API server (connect refused, DNS, TLS handshake),
  // so even a non-idempotent verb may be sent again.
  bool request_not_sent = false;
  // True when sending it again cannot help: the server's certificate failed verification (a wrong CA or
  // server name), which only a change of configuration fixes, or the answer was larger than the
  // request's limit. Never retried.
  bool permanent = false;

  // "Conflict (HTTP 409): Operation cannot be fulfilled on configmaps \"a\": ...; causes: ..."
  std::string to_string() const;
};

Error make_error(Reason reason, std::string message, int http_code = 0);

// Parse an HTTP error response. `body` is usually a metav1.Status; anything else (an HTML page from a
// proxy, an empty 401) still yields the reason implied by `http_code` and a message quoting the body.
Error error_from_response(int http_code, std::string_view body);

// Parse an already-decoded metav1.Status object (a watch ERROR event carries one). `http_code` is used
// when the Status has no `code`.
Error error_from_status(const rapidjson::Value& status, int http_code = 0);

// The reason implied by an HTTP status code alone.
Reason reason_from_http_code(int http_code);

inline bool is_not_found(const Error& error) { return error.reason == Reason::NotFound; }
inline bool is_already_exists(const Error& error) { return error.reason == Reason::AlreadyExists; }
inline bool is_conflict(const Error& error) { return error.reason == Reason::Conflict; }
inline bool is_invalid(const Error& error) { return error.reason == Reason::Invalid; }
inline bool is_forbidden(const Error& error) { return error.reason == Reason::Forbidden; }
inline bool is_unauthorized(const Error& error) { return error.reason == Reason::Unauthorized; }
inline bool is_gone(const Error& error) { return error.reason == Reason::Gone; }
inline bool is_too_many_requests(const Error& error) { return error.reason == Reason::TooManyRequests; }
inline bool is_timeout(const Error& error) { return error.reason == Reason::Timeout; }
inline bool is_transport(const Error& error) { return error.reason == Reason::Transport; }
inline bool is_cancelled(const Error& error) { return error.reason == Reason::Cancelled; }

// A value or an Error (base/result.h): what every API call returns.
template <typename T>
using Result = base::Result<T, Error>;

}  // namespace myop::kube
