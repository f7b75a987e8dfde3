// metav1.Time on the wire: RFC 3339 in UTC with second precision ("2026-11-29T19:18:40Z").
// Condition times, creation timestamps and the canary start time all use it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace myop::myresource {

using WallTime = std::chrono::system_clock::time_point;

// Whole seconds, UTC, "Z" suffix: what the API server itself writes for metav1.Time.
std::string format_rfc3339(WallTime time);

// Accepts "Z" or a numeric offset and an optional fraction (MicroTime), as the server may send either.
std::optional<WallTime> parse_rfc3339(std::string_view text);

}  // namespace myop::myresource
