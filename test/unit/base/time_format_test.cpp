#include "base/time_format.h"

#include <catch2/catch.hpp>

using namespace myop::base;
using namespace std::chrono;

TEST_CASE("format_rfc3339 writes whole seconds in UTC", "[base][time]") {
  WallTime time = sys_days(year(2026) / 11 / 29) + hours(19) + minutes(8) + seconds(5) + milliseconds(999);
  CHECK(format_rfc3339(time) == "2026-11-29T19:08:05Z");
  CHECK(format_rfc3339(WallTime{}) == "1970-01-01T00:00:00Z");
}

TEST_CASE("parse_rfc3339 reads Time and MicroTime, with offsets", "[base][time]") {
  WallTime expected = sys_days(year(2026) / 11 / 29) + hours(19) + minutes(8) + seconds(5);
  CHECK(parse_rfc3339("2026-11-29T19:08:05Z") == expected);
  CHECK(parse_rfc3339("2026-11-29T21:08:05+02:00") == expected);
  CHECK(parse_rfc3339("2026-11-29T19:08:05.250000Z") == expected + milliseconds(250));
  CHECK(format_rfc3339(*parse_rfc3339("2026-02-28T23:59:59Z")) == "2026-02-28T23:59:59Z");
}

TEST_CASE("parse_rfc3339 refuses what is not RFC 3339", "[base][time]") {
  auto text = GENERATE(as<std::string>{}, "", "2026-11-29", "2026-11-29T19:08:05", "2026-13-01T00:00:00Z",
                       "2026-02-30T00:00:00Z", "2026-11-29T19:08:05Zjunk", "2026-11-29T25:00:00Z",
                       "2026-11-29 19:08:05Z", "2026-11-29T19:08:05.Z");
  CAPTURE(text);
  CHECK_FALSE(parse_rfc3339(text));
}

TEST_CASE("format_micro_time writes microseconds in UTC, and parse_rfc3339 reads them back", "[base][time]") {
  WallTime time =
      sys_days(year(2026) / 11 / 29) + hours(19) + minutes(58) + seconds(6) + microseconds(123456);
  CHECK(format_micro_time(time) == "2026-11-29T19:58:06.123456Z");
  CHECK(format_micro_time(WallTime{}) == "1970-01-01T00:00:00.000000Z");
  CHECK(parse_rfc3339(format_micro_time(time)) == time);
  // Below a microsecond is dropped, not rounded up.
  CHECK(format_micro_time(time + nanoseconds(999)) == "2026-11-29T19:58:06.123456Z");
}
