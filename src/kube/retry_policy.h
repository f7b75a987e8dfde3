// When and how long to wait before sending a failed request again. Pure logic, no I/O, so the whole
// schedule is unit-tested.
//
// Retried: 429 (the server shed the request before doing anything, so any verb), 503 and 504 and
// 500/ServerTimeout for idempotent verbs or when the server sent Retry-After, connection resets for
// idempotent verbs, and any failure where the request certainly never reached the server. At most
// `max_retries` times (client-go uses 10). The wait is Retry-After when the server gave one, else the
// exponential base::Backoff schedule; jitter (upwards, so a Retry-After stays a minimum) spreads a
// crowd of clients apart.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

#include "base/backoff.h"
#include "kube/errors.h"

namespace myop::kube {

bool is_idempotent_method(std::string_view method);

struct RetrySettings {
  int max_retries = 10;
  // The backoff without Retry-After: 200 ms doubling to 10 s.
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{10'000};
  std::chrono::seconds max_retry_after{60};  // a larger Retry-After is capped, never ignored
  double jitter = 0.2;                       // up to +20 %, on Retry-After too
};

class RetryPolicy {
 public:
  using Settings = RetrySettings;

  // `random` returns a value in [0, 1); injectable for deterministic tests.
  explicit RetryPolicy(Settings settings = Settings{}, std::function<double()> random = {});

  // The wait before retry number `attempt` (1 for the first retry) after `error`, or nullopt to give up.
  std::optional<std::chrono::milliseconds> next_delay(int attempt, std::string_view method,
                                                      const Error& error) const;

  // Whether `error` is of a kind that may be retried at all for `method` (ignores the attempt count).
  static bool is_retryable(std::string_view method, const Error& error);

  const Settings& settings() const { return settings_; }

  // A draw of the policy's random source in [0, 1), for jitter applied elsewhere (server_backoff.h).
  double random_unit() const { return random_(); }

 private:
  Settings settings_;
  base::BackoffSchedule schedule_;
  std::function<double()> random_;
};

}  // namespace myop::kube
