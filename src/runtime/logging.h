#pragma once
// Structured logs on spdlog, as text (`message key=value ...`) or JSON (one object a line).
// Call configure_logging() once at start-up. Plain spdlog calls from other layers stay valid in
// both formats: the JSON formatter escapes any message it did not build itself.
#include <spdlog/spdlog.h>

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace myop::runtime {

enum class LogFormat { text, json };

void configure_logging(LogFormat format, spdlog::level::level_enum level);
LogFormat log_format();

struct LogField {
  std::string_view key;
  std::string value;
};

// Logs `message` with fields, e.g. {{"controller", "myresource"}, {"namespace", "a"}}.
void log(spdlog::level::level_enum level, std::string_view message, std::initializer_list<LogField> fields);
// The same with fields built at run time (some present only sometimes).
void log(spdlog::level::level_enum level, std::string_view message, std::span<const LogField> fields);

// The text of one JSON string literal, quotes included.
std::string json_quote(std::string_view text);

}  // namespace myop::runtime
