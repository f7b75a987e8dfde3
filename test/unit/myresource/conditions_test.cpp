#include "myresource/conditions.h"

#include <catch2/catch.hpp>

using namespace myop::myresource;
using namespace std::chrono;
using myop::base::format_rfc3339;

namespace {

const WallTime kFirst = sys_days(year(2026) / 1 / 1);
const WallTime kLater = kFirst + minutes(5);

Condition ready(ConditionStatus status, std::string reason = "Available", std::string message = "ok",
                std::int64_t generation = 1) {
  return Condition{"Ready", status, std::move(reason), std::move(message), generation, ""};
}

}  // namespace

TEST_CASE("set_condition adds a new type with now as lastTransitionTime", "[myresource][conditions]") {
  std::vector<Condition> conditions;
  CHECK(set_condition(conditions, ready(ConditionStatus::True), kFirst));
  REQUIRE(conditions.size() == 1);
  CHECK(conditions[0].last_transition_time == format_rfc3339(kFirst));
  CHECK(find_condition(conditions, "Ready") == &conditions[0]);
  CHECK(find_condition(conditions, "Degraded") == nullptr);
  CHECK(is_condition_true(conditions, "Ready"));
}

TEST_CASE("lastTransitionTime moves only when status flips", "[myresource][conditions]") {
  struct Case {
    const char* what;
    Condition next;
    bool changed;
    bool time_moves;
  };
  auto scenario = GENERATE(values<Case>({
      {"same everything", ready(ConditionStatus::True), false, false},
      {"new message", ready(ConditionStatus::True, "Available", "other"), true, false},
      {"new reason", ready(ConditionStatus::True, "RollingOut"), true, false},
      {"new generation", ready(ConditionStatus::True, "Available", "ok", 2), true, false},
      {"True -> False", ready(ConditionStatus::False), true, true},
      {"True -> Unknown", ready(ConditionStatus::Unknown), true, true},
  }));
  CAPTURE(scenario.what);
  std::vector<Condition> conditions;
  set_condition(conditions, ready(ConditionStatus::True), kFirst);
  Condition next = scenario.next;
  next.last_transition_time = "1999-01-01T00:00:00Z";  // ignored: the helper decides the time
  CHECK(set_condition(conditions, next, kLater) == scenario.changed);
  REQUIRE(conditions.size() == 1);
  CHECK(conditions[0].last_transition_time == format_rfc3339(scenario.time_moves ? kLater : kFirst));
  CHECK(conditions[0].message == scenario.next.message);
}

TEST_CASE("a condition read without a time gets one", "[myresource][conditions]") {
  std::vector<Condition> conditions{ready(ConditionStatus::True)};
  CHECK(set_condition(conditions, ready(ConditionStatus::True), kLater));
  CHECK(conditions[0].last_transition_time == format_rfc3339(kLater));
}

TEST_CASE("remove_condition removes by type", "[myresource][conditions]") {
  std::vector<Condition> conditions;
  set_condition(conditions, ready(ConditionStatus::True), kFirst);
  set_condition(conditions, Condition{"Canary", ConditionStatus::True, "CanaryRunning", "", 1, ""}, kFirst);
  CHECK(remove_condition(conditions, "Canary"));
  CHECK_FALSE(remove_condition(conditions, "Canary"));
  REQUIRE(conditions.size() == 1);
  CHECK(conditions[0].type == "Ready");
}

TEST_CASE("same_conditions ignores order but nothing else", "[myresource][conditions]") {
  std::vector<Condition> left, right;
  Condition degraded{"Degraded", ConditionStatus::False, "AsExpected", "", 1, ""};
  set_condition(left, ready(ConditionStatus::True), kFirst);
  set_condition(left, degraded, kFirst);
  set_condition(right, degraded, kFirst);
  set_condition(right, ready(ConditionStatus::True), kFirst);
  CHECK(same_conditions(left, right));

  std::vector<Condition> other_time = right;
  other_time[1].last_transition_time = format_rfc3339(kLater);
  CHECK_FALSE(same_conditions(left, other_time));
  std::vector<Condition> shorter(right.begin(), right.begin() + 1);
  CHECK_FALSE(same_conditions(left, shorter));
  CHECK_FALSE(same_conditions(shorter, left));
}

TEST_CASE("condition status text round-trips and refuses other spellings", "[myresource][conditions]") {
  for (ConditionStatus status : {ConditionStatus::True, ConditionStatus::False, ConditionStatus::Unknown}) {
    CHECK(parse_condition_status(to_string(status)) == status);
  }
  CHECK_FALSE(parse_condition_status("true"));
  CHECK_FALSE(parse_condition_status(""));
}
