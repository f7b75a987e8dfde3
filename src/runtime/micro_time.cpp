#include "runtime/micro_time.h"

#include <cstdio>
#include <ctime>

namespace myop::runtime {

std::string format_micro_time(std::chrono::system_clock::time_point time) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(since_epoch.count() / 1000000);
  const long microseconds = static_cast<long>(since_epoch.count() % 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, microseconds);
  return text;
}

}  // namespace myop::runtime
