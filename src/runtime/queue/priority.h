#pragma once
// Work priorities, ordered: a higher value is handed to a worker first.
// high: user changes and deletions; normal: child status changes; low: initial list and resync.
#include <array>
#include <string_view>

namespace myop::runtime {

enum class Priority { low = 0, normal = 1, high = 2 };

inline constexpr std::array<Priority, 3> kAllPriorities{Priority::low, Priority::normal, Priority::high};

inline constexpr std::string_view priority_name(Priority priority) {
  switch (priority) {
    case Priority::low:
      return "low";
    case Priority::normal:
      return "normal";
    case Priority::high:
      return "high";
  }
  return "unknown";
}

inline constexpr std::size_t priority_index(Priority priority) { return static_cast<std::size_t>(priority); }

}  // namespace myop::runtime
