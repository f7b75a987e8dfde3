#include "base/time_format.h"

#include <cstdio>

namespace myop::base {
namespace {

bool read_digits(std::string_view text, std::size_t& position, int count, int& value) {
  value = 0;
  for (int index = 0; index < count; ++index) {
    if (position >= text.size() || text[position] < '0' || text[position] > '9') return false;
    value = value * 10 + (text[position] - '0');
    ++position;
  }
  return true;
}

bool expect(std::string_view text, std::size_t& position, char character) {
  if (position >= text.size() || text[position] != character) return false;
  ++position;
  return true;
}

// "YYYY-MM-DDThh:mm:ss" in UTC, then ".uuuuuu" when asked, then "Z".
std::string format_utc(WallTime time, bool with_microseconds) {
  const auto microseconds = std::chrono::floor<std::chrono::microseconds>(time);
  const auto seconds = std::chrono::floor<std::chrono::seconds>(microseconds);
  const auto days = std::chrono::floor<std::chrono::days>(seconds);
  const std::chrono::year_month_day date{days};
  const std::chrono::hh_mm_ss clock{seconds - days};
  char buffer[40];
  int length =
      std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(date.year()),
                    static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                    static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
                    static_cast<int>(clock.seconds().count()));
  if (with_microseconds) {
    length += std::snprintf(buffer + length, sizeof buffer - static_cast<std::size_t>(length), ".%06lld",
                            static_cast<long long>((microseconds - seconds).count()));
  }
  std::snprintf(buffer + length, sizeof buffer - static_cast<std::size_t>(length), "Z");
  return buffer;
}

}  // namespace

std::string format_rfc3339(WallTime time) { return format_utc(time, false); }

std::string format_micro_time(WallTime time) { return format_utc(time, true); }

std::optional<WallTime> parse_rfc3339(std::string_view text) {
  std::size_t position = 0;
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!read_digits(text, position, 4, year) || !expect(text, position, '-') ||
      !read_digits(text, position, 2, month) || !expect(text, position, '-') ||
      !read_digits(text, position, 2, day)) {
    return std::nullopt;
  }
  if (position >= text.size() || (text[position] != 'T' && text[position] != 't')) return std::nullopt;
  ++position;
  if (!read_digits(text, position, 2, hour) || !expect(text, position, ':') ||
      !read_digits(text, position, 2, minute) || !expect(text, position, ':') ||
      !read_digits(text, position, 2, second)) {
    return std::nullopt;
  }
  std::chrono::microseconds fraction{0};
  if (position < text.size() && text[position] == '.') {
    ++position;
    long long scale = 100000;
    std::size_t digits = 0;
    while (position < text.size() && text[position] >= '0' && text[position] <= '9') {
      if (scale > 0) fraction += std::chrono::microseconds((text[position] - '0') * scale);
      scale /= 10;
      ++position;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  std::chrono::minutes offset{0};
  if (position < text.size() && (text[position] == 'Z' || text[position] == 'z')) {
    ++position;
  } else if (position < text.size() && (text[position] == '+' || text[position] == '-')) {
    int sign = text[position] == '-' ? -1 : 1;
    ++position;
    int offset_hours = 0;
    int offset_minutes = 0;
    if (!read_digits(text, position, 2, offset_hours) || !expect(text, position, ':') ||
        !read_digits(text, position, 2, offset_minutes)) {
      return std::nullopt;
    }
    offset = std::chrono::minutes(sign * (offset_hours * 60 + offset_minutes));
  } else {
    return std::nullopt;
  }
  if (position != text.size()) return std::nullopt;

  std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                                   std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  auto time = std::chrono::sys_days(date) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
              std::chrono::seconds(second) + fraction - offset;
  return std::chrono::time_point_cast<WallTime::duration>(time);
}

}  // namespace myop::base
