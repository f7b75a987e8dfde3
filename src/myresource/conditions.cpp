#include "myresource/conditions.h"

#include <algorithm>

namespace myop::myresource {

std::string_view to_string(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::True:
      return "True";
    case ConditionStatus::False:
      return "False";
    case ConditionStatus::Unknown:
      return "Unknown";
  }
  return "Unknown";
}

std::optional<ConditionStatus> parse_condition_status(std::string_view text) {
  if (text == "True") return ConditionStatus::True;
  if (text == "False") return ConditionStatus::False;
  if (text == "Unknown") return ConditionStatus::Unknown;
  return std::nullopt;
}

const Condition* find_condition(const std::vector<Condition>& conditions, std::string_view type) {
  auto found = std::find_if(conditions.begin(), conditions.end(),
                            [&](const Condition& condition) { return condition.type == type; });
  return found == conditions.end() ? nullptr : &*found;
}

bool is_condition_true(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* condition = find_condition(conditions, type);
  return condition != nullptr && condition->status == ConditionStatus::True;
}

bool set_condition(std::vector<Condition>& conditions, Condition condition, WallTime now) {
  auto existing = std::find_if(conditions.begin(), conditions.end(),
                               [&](const Condition& candidate) { return candidate.type == condition.type; });
  if (existing == conditions.end()) {
    condition.last_transition_time = base::format_rfc3339(now);
    conditions.push_back(std::move(condition));
    return true;
  }
  if (existing->status != condition.status || existing->last_transition_time.empty()) {
    condition.last_transition_time = base::format_rfc3339(now);
  } else {
    condition.last_transition_time = existing->last_transition_time;
  }
  bool changed = !(*existing == condition);
  *existing = std::move(condition);
  return changed;
}

bool remove_condition(std::vector<Condition>& conditions, std::string_view type) {
  auto removed = std::remove_if(conditions.begin(), conditions.end(),
                                [&](const Condition& condition) { return condition.type == type; });
  bool found = removed != conditions.end();
  conditions.erase(removed, conditions.end());
  return found;
}

bool same_conditions(const std::vector<Condition>& left, const std::vector<Condition>& right) {
  if (left.size() != right.size()) return false;
  return std::ranges::all_of(left, [&](const Condition& condition) {
    const Condition* other = find_condition(right, condition.type);
    return other != nullptr && *other == condition;
  });
}

}  // namespace myop::myresource
