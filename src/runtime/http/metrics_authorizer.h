// Authorization of /metrics scrapes, as controller-runtime's WithAuthenticationAndAuthorization
// filter does it: the bearer token is authenticated with a TokenReview, and the user it names must
// be allowed `get` on the non-resource URL (e.g. /metrics) by a SubjectAccessReview. RBAC grants
// that with a ClusterRole rule `nonResourceURLs: [/metrics], verbs: [get]` (the chart's
// metrics-reader).
//
// Pure decision logic over an AccessReviewer; the HTTP server (runtime/http/http_server) calls
// `authorize` with the request's Authorization header and answers 401 / 403 / 500 itself.
// Answers are cached by a SHA-256 of the token (never the token itself) for a short time, so a
// Prometheus scraping every few seconds costs the API server two requests a few times an hour.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/errors.h"

namespace myop::runtime {

// Who a token belongs to, as the TokenReview said.
struct AuthenticatedUser {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// The two questions asked of the API server, behind an interface for tests.
class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // nullopt: the token is not valid (unknown, expired, wrong audience). An Error: no answer.
  virtual kube::Result<std::optional<AuthenticatedUser>> review_token(std::string_view token) = 0;
  // Whether `user` may `verb` the non-resource `path`. An Error: no answer.
  virtual kube::Result<bool> review_access(const AuthenticatedUser& user, std::string_view verb,
                                           std::string_view path) = 0;
};

// The AccessReviewer that POSTs authentication.k8s.io/v1 TokenReviews and
// authorization.k8s.io/v1 SubjectAccessReviews. Needs RBAC: create on tokenreviews and
// subjectaccessreviews (controller-runtime's metrics-auth-role).
class KubeAccessReviewer final : public AccessReviewer {
 public:
  // `audiences`: the audiences the token must carry; empty accepts the API server's own.
  explicit KubeAccessReviewer(std::shared_ptr<kube::Client> client, std::vector<std::string> audiences = {});
  kube::Result<std::optional<AuthenticatedUser>> review_token(std::string_view token) override;
  kube::Result<bool> review_access(const AuthenticatedUser& user, std::string_view verb,
                                   std::string_view path) override;

 private:
  std::shared_ptr<kube::Client> client_;
  std::vector<std::string> audiences_;
};

enum class ScrapeDecision {
  Allowed,
  Unauthenticated,  // 401: no bearer token, or the TokenReview did not authenticate it
  Forbidden,        // 403: authenticated, but the SubjectAccessReview did not allow it
  Unavailable,      // 500: the API server could not be asked; never cached
};

struct ScrapeAuthorization {
  ScrapeDecision decision = ScrapeDecision::Unavailable;
  int http_status = 500;
  std::string user;     // the authenticated user, when there is one
  std::string message;  // for the response body and the log; never contains the token
};

// The RBAC verb of a request for a non-resource URL such as /metrics: the lower-cased HTTP method
// ("GET" -> "get", "HEAD" -> "head"), exactly as the API server's RequestInfo names it for
// non-resource requests and as controller-runtime's metrics filter asks it. (Only resource
// requests under /api and /apis map HEAD to "get".) So a role granting `get` on /metrics allows
// GET scrapes; HEAD needs `head` too, on the API server's own /metrics as on ours.
std::string non_resource_verb(std::string_view http_method);

// The token of an "Authorization: Bearer <token>" header value; nullopt for anything else.
std::optional<std::string_view> bearer_token(std::string_view authorization_header);

struct MetricsAuthorizerOptions {
  // The same defaults as the API server's delegated authentication/authorization caches.
  std::chrono::seconds authenticated_ttl{120};
  std::chrono::seconds allowed_ttl{300};
  std::chrono::seconds denied_ttl{30};   // unauthenticated tokens and denied access
  std::size_t max_cached_tokens = 1024;  // beyond this the cache is emptied (a flood of bad tokens)
};

class MetricsAuthorizer {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit MetricsAuthorizer(
      std::shared_ptr<AccessReviewer> reviewer, MetricsAuthorizerOptions options = {},
      Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Thread-safe. `verb` is the lower-case HTTP verb as RBAC names it ("get"); `path` the request
  // path ("/metrics").
  ScrapeAuthorization authorize(std::string_view authorization_header, std::string_view verb,
                                std::string_view path);

 private:
  struct CachedAnswer {
    ScrapeAuthorization answer;
    std::chrono::steady_clock::time_point expires;
  };

  std::shared_ptr<AccessReviewer> reviewer_;
  MetricsAuthorizerOptions options_;
  Clock clock_;
  std::mutex mutex_;
  std::map<std::string, CachedAnswer> cache_;  // key: sha256(token) + verb + path
};

}  // namespace myop::runtime
