// metav1.Condition semantics for MyResource status.
//
// The rules that keep status writes rare and honest: a condition is keyed by type (at most one per
// type); lastTransitionTime moves only when status flips between True/False/Unknown, not when only
// the reason or message changes; and two condition lists are equal regardless of order, so "did the
// status change?" never answers yes because of ordering alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/time_format.h"

namespace myop::myresource {

// Condition times and the canary start: wall-clock time, written as RFC 3339.
using base::WallTime;

enum class ConditionStatus { True, False, Unknown };

std::string_view to_string(ConditionStatus status);
// "True"/"False"/"Unknown" exactly; nullopt otherwise.
std::optional<ConditionStatus> parse_condition_status(std::string_view text);

struct Condition {
  std::string type;
  ConditionStatus status = ConditionStatus::Unknown;
  std::string reason;
  std::string message;
  std::int64_t observed_generation = 0;
  std::string last_transition_time;  // RFC 3339, as stored; see base/time_format.h

  bool operator==(const Condition&) const = default;
};

// Condition types of MyResource (docs/design.md).
namespace condition_type {
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kProgressing = "Progressing";
inline constexpr std::string_view kDegraded = "Degraded";
inline constexpr std::string_view kCanary = "Canary";
}  // namespace condition_type

// Condition reasons, CamelCase; docs/design.md ("status") says when each is set. Every status has
// one, False included, as metav1.Condition requires (hence AsExpected for Degraded=False).
namespace reason {
inline constexpr std::string_view kAvailable = "Available";
inline constexpr std::string_view kRollingOut = "RollingOut";
inline constexpr std::string_view kInvalidSpec = "InvalidSpec";
inline constexpr std::string_view kReconcileError = "ReconcileError";
inline constexpr std::string_view kCanaryRunning = "CanaryRunning";
inline constexpr std::string_view kCanaryFailed = "CanaryFailed";
inline constexpr std::string_view kCanaryPromoted = "CanaryPromoted";
inline constexpr std::string_view kPaused = "Paused";
inline constexpr std::string_view kDeleting = "Deleting";
inline constexpr std::string_view kCleanupFailed = "CleanupFailed";
// Degraded=False: nothing is wrong.
inline constexpr std::string_view kAsExpected = "AsExpected";
// The stable Deployment reports ProgressDeadlineExceeded: the rollout is stuck.
inline constexpr std::string_view kProgressDeadlineExceeded = "ProgressDeadlineExceeded";
// Canary requested by annotation but switched off by a feature flag.
inline constexpr std::string_view kCanaryDisabled = "CanaryDisabled";
}  // namespace reason

// The condition of `type`, or nullptr.
const Condition* find_condition(const std::vector<Condition>& conditions, std::string_view type);

bool is_condition_true(const std::vector<Condition>& conditions, std::string_view type);

// Sets `condition` (matched by type). lastTransitionTime becomes `now` when the type is new or its
// status flips, and is kept otherwise; the time given in `condition` is ignored. Returns true when
// anything (status, reason, message, observedGeneration) changed.
bool set_condition(std::vector<Condition>& conditions, Condition condition, WallTime now);

// Removes the condition of `type`; true when there was one.
bool remove_condition(std::vector<Condition>& conditions, std::string_view type);

// Same set of conditions, order ignored, every field compared (lastTransitionTime included).
bool same_conditions(const std::vector<Condition>& left, const std::vector<Condition>& right);

}  // namespace myop::myresource
