#include "runtime/http/metrics_authorizer.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <utility>

#include "base/digest.h"
#include "kube/object.h"

namespace myop::runtime {
namespace {

const kube::ResourceType kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false, "TokenReview"};
const kube::ResourceType kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews", false,
                                               "SubjectAccessReview"};

std::string string_member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  const auto member = object.FindMember(name);
  return member != object.MemberEnd() && member->value.IsString() ? member->value.GetString() : std::string();
}

std::vector<std::string> string_array(const rapidjson::Value& value) {
  std::vector<std::string> strings;
  if (!value.IsArray()) return strings;
  for (const auto& item : value.GetArray())
    if (item.IsString()) strings.emplace_back(item.GetString());
  return strings;
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  const auto found = object.FindMember(name);
  return found == object.MemberEnd() ? nullptr : &found->value;
}

bool equal_ignoring_case(std::string_view left, std::string_view right) {
  if (left.size() != right.size()) return false;
  for (std::size_t i = 0; i < left.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(left[i]) != lower(right[i])) return false;
  }
  return true;
}

ScrapeAuthorization answer(ScrapeDecision decision, std::string user, std::string message) {
  ScrapeAuthorization result;
  result.decision = decision;
  result.http_status = decision == ScrapeDecision::Allowed           ? 200
                       : decision == ScrapeDecision::Unauthenticated ? 401
                       : decision == ScrapeDecision::Forbidden       ? 403
                                                                     : 500;
  result.user = std::move(user);
  result.message = std::move(message);
  return result;
}

}  // namespace

std::string non_resource_verb(std::string_view http_method) {
  std::string verb(http_method);
  for (char& c : verb)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return verb;
}

std::optional<std::string_view> bearer_token(std::string_view header) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() + 1 ||
      !equal_ignoring_case(header.substr(0, kScheme.size()), kScheme) || header[kScheme.size()] != ' ')
    return std::nullopt;
  std::string_view token = header.substr(kScheme.size() + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.empty() || token.find(' ') != std::string_view::npos) return std::nullopt;
  return token;
}

KubeAccessReviewer::KubeAccessReviewer(std::shared_ptr<kube::Client> client,
                                       std::vector<std::string> audiences)
    : client_(std::move(client)), audiences_(std::move(audiences)) {}

kube::Result<std::optional<AuthenticatedUser>> KubeAccessReviewer::review_token(std::string_view token) {
  rapidjson::Document review(rapidjson::kObjectType);
  auto& allocator = review.GetAllocator();
  review.AddMember("apiVersion", "authentication.k8s.io/v1", allocator);
  review.AddMember("kind", "TokenReview", allocator);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("token", kube::json_string(token, allocator), allocator);
  if (!audiences_.empty()) {
    rapidjson::Value audiences(rapidjson::kArrayType);
    for (const auto& audience : audiences_)
      audiences.PushBack(kube::json_string(audience, allocator), allocator);
    spec.AddMember("audiences", std::move(audiences), allocator);
  }
  review.AddMember("spec", std::move(spec), allocator);

  auto response = client_->create(kTokenReviews, "", review);
  if (!response.ok()) return std::move(response).error();
  const rapidjson::Value* status = member(*response, "status");
  const rapidjson::Value* authenticated = status ? member(*status, "authenticated") : nullptr;
  if (!authenticated || !authenticated->IsBool() || !authenticated->GetBool())
    return std::optional<AuthenticatedUser>();
  const rapidjson::Value* user_value = member(*status, "user");
  if (!user_value) return std::optional<AuthenticatedUser>();
  AuthenticatedUser user;
  user.name = string_member(*user_value, "username");
  user.uid = string_member(*user_value, "uid");
  if (const auto* groups = member(*user_value, "groups")) user.groups = string_array(*groups);
  if (const auto* extra = member(*user_value, "extra"); extra && extra->IsObject())
    for (const auto& entry : extra->GetObject())
      user.extra[entry.name.GetString()] = string_array(entry.value);
  if (user.name.empty()) return std::optional<AuthenticatedUser>();
  return std::optional<AuthenticatedUser>(std::move(user));
}

kube::Result<bool> KubeAccessReviewer::review_access(const AuthenticatedUser& user, std::string_view verb,
                                                     std::string_view path) {
  rapidjson::Document review(rapidjson::kObjectType);
  auto& allocator = review.GetAllocator();
  review.AddMember("apiVersion", "authorization.k8s.io/v1", allocator);
  review.AddMember("kind", "SubjectAccessReview", allocator);
  rapidjson::Value spec(rapidjson::kObjectType);
  spec.AddMember("user", kube::json_string(user.name, allocator), allocator);
  if (!user.uid.empty()) spec.AddMember("uid", kube::json_string(user.uid, allocator), allocator);
  rapidjson::Value groups(rapidjson::kArrayType);
  for (const auto& group : user.groups) groups.PushBack(kube::json_string(group, allocator), allocator);
  spec.AddMember("groups", std::move(groups), allocator);
  if (!user.extra.empty()) {
    rapidjson::Value extra(rapidjson::kObjectType);
    for (const auto& [key, values] : user.extra) {
      rapidjson::Value list(rapidjson::kArrayType);
      for (const auto& value : values) list.PushBack(kube::json_string(value, allocator), allocator);
      extra.AddMember(kube::json_string(key, allocator), std::move(list), allocator);
    }
    spec.AddMember("extra", std::move(extra), allocator);
  }
  rapidjson::Value attributes(rapidjson::kObjectType);
  attributes.AddMember("path", kube::json_string(path, allocator), allocator);
  attributes.AddMember("verb", kube::json_string(verb, allocator), allocator);
  spec.AddMember("nonResourceAttributes", std::move(attributes), allocator);
  review.AddMember("spec", std::move(spec), allocator);

  auto response = client_->create(kSubjectAccessReviews, "", review);
  if (!response.ok()) return std::move(response).error();
  const rapidjson::Value* status = member(*response, "status");
  const rapidjson::Value* allowed = status ? member(*status, "allowed") : nullptr;
  return allowed != nullptr && allowed->IsBool() && allowed->GetBool();
}

MetricsAuthorizer::MetricsAuthorizer(std::shared_ptr<AccessReviewer> reviewer,
                                     MetricsAuthorizerOptions options, Clock clock)
    : reviewer_(std::move(reviewer)), options_(options), clock_(std::move(clock)) {}

ScrapeAuthorization MetricsAuthorizer::authorize(std::string_view authorization_header, std::string_view verb,
                                                 std::string_view path) {
  const auto token = bearer_token(authorization_header);
  if (!token) return answer(ScrapeDecision::Unauthenticated, "", "Unauthorized: a bearer token is required");

  const std::string key = base::sha256_hex(*token) + " " + std::string(verb) + " " + std::string(path);
  const auto now = clock_();
  {
    std::lock_guard lock(mutex_);
    const auto cached = cache_.find(key);
    if (cached != cache_.end()) {
      if (cached->second.expires > now) return cached->second.answer;
      cache_.erase(cached);
    }
  }

  // The reviews run outside the lock: two scrapes with one new token may both ask; that is harmless.
  ScrapeAuthorization result;
  std::chrono::seconds ttl{0};
  auto user = reviewer_->review_token(*token);
  if (!user.ok()) {
    return answer(ScrapeDecision::Unavailable, "",
                  "authentication unavailable: TokenReview failed: " + user.error().message);
  }
  if (!user->has_value()) {
    result = answer(ScrapeDecision::Unauthenticated, "", "Unauthorized: the token was not authenticated");
    ttl = options_.denied_ttl;
  } else {
    const AuthenticatedUser& who = **user;
    auto allowed = reviewer_->review_access(who, verb, path);
    if (!allowed.ok()) {
      return answer(ScrapeDecision::Unavailable, who.name,
                    "authorization unavailable: SubjectAccessReview failed: " + allowed.error().message);
    }
    if (*allowed) {
      result = answer(ScrapeDecision::Allowed, who.name, "");
      ttl = std::min(options_.allowed_ttl, options_.authenticated_ttl);
    } else {
      result = answer(
          ScrapeDecision::Forbidden, who.name,
          "Forbidden: user \"" + who.name + "\" may not " + std::string(verb) + " " + std::string(path));
      ttl = options_.denied_ttl;
    }
  }

  std::lock_guard lock(mutex_);
  if (cache_.size() >= options_.max_cached_tokens) cache_.clear();
  cache_[key] = CachedAnswer{result, now + ttl};
  return result;
}

}  // namespace myop::runtime
