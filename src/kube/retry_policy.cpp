#include "kube/retry_policy.h"

#include <algorithm>
#include <random>

#include "base/random.h"

namespace myop::kube {
namespace {

double default_random() { return std::uniform_real_distribution<double>(0.0, 1.0)(base::thread_random()); }

}  // namespace

bool is_idempotent_method(std::string_view method) {
  // PUT carries a resourceVersion precondition or replaces the whole object; a repeat after success
  // either changes nothing or fails with 409, never writes twice. POST and PATCH (JSON patch appends)
  // are not safe to repeat blindly.
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "PUT" || method == "DELETE";
}

RetryPolicy::RetryPolicy(Settings settings, std::function<double()> random)
    : settings_(settings),
      schedule_(base::BackoffSettings{settings.initial_backoff, settings.max_backoff, 2.0, settings.jitter,
                                      base::JitterDirection::up}),
      random_(random ? std::move(random) : std::function<double()>(default_random)) {}

bool RetryPolicy::is_retryable(std::string_view method, const Error& error) {
  if (error.permanent) return false;
  if (error.request_not_sent)
    return error.reason != Reason::Cancelled && error.reason != Reason::InvalidConfiguration;
  switch (error.reason) {
    case Reason::TooManyRequests:
      // API Priority and Fairness and max-in-flight reject before doing any work.
      return true;
    case Reason::ServiceUnavailable:
    case Reason::Timeout:
      // An explicit Retry-After is the server asking us to come back; otherwise only a verb that is safe
      // to repeat. A client-side deadline (no HTTP code) is final: the caller's time is up.
      if (error.http_code == 0) return false;
      return error.retry_after.has_value() || is_idempotent_method(method);
    case Reason::InternalError:
      return error.retry_after.has_value() && is_idempotent_method(method);
    case Reason::Transport:
      // Connection reset or closed mid-request: the server may have acted on it.
      return is_idempotent_method(method);
    default:
      return false;
  }
}

std::optional<std::chrono::milliseconds> RetryPolicy::next_delay(int attempt, std::string_view method,
                                                                 const Error& error) const {
  if (attempt < 1 || attempt > settings_.max_retries) return std::nullopt;
  if (!is_retryable(method, error)) return std::nullopt;

  // The first retry waits ceiling(0) = initial_backoff.
  const base::Duration ceiling =
      error.retry_after
          ? base::Duration(std::min<std::chrono::milliseconds>(*error.retry_after, settings_.max_retry_after))
          : schedule_.ceiling(attempt - 1);
  return std::chrono::duration_cast<std::chrono::milliseconds>(schedule_.jittered(ceiling, random_()));
}

}  // namespace myop::kube
