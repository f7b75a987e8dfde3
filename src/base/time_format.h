// Times on the wire, as the API server writes them:
// - metav1.Time: RFC 3339 in UTC with second precision ("2026-11-29T19:18:40Z"): condition times,
//   creation timestamps, the canary start time, exec credential expiry.
// - metav1.MicroTime: the same with microseconds ("2026-11-29T19:58:06.123456Z"): Lease
//   acquireTime/renewTime, events.k8s.io eventTime/lastObservedTime.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace myop::base {

// Whole seconds, UTC, "Z" suffix.
std::string format_rfc3339(WallTime time);

// Microseconds, UTC, "Z" suffix.
std::string format_micro_time(WallTime time);

// Accepts "Z" or a numeric offset and an optional fraction (MicroTime), as the server may send either.
std::optional<WallTime> parse_rfc3339(std::string_view text);

}  // namespace myop::base
