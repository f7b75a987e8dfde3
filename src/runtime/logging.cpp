#include "runtime/logging.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace myop::runtime {

namespace {

std::atomic<LogFormat> current_format{LogFormat::text};

// Separates a message from its pre-rendered JSON fields inside one spdlog payload.
constexpr char kFieldSeparator = '\x1f';

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& destination) override {
    const std::string_view payload(message.payload.data(), message.payload.size());
    const auto separator = payload.find(kFieldSeparator);
    const std::string_view text = payload.substr(0, separator);
    const std::string_view fields =
        separator == std::string_view::npos ? std::string_view() : payload.substr(separator + 1);

    const auto since_epoch = message.time.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
    const long microseconds = static_cast<long>(
        std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count() % 1000000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char time_text[64];
    std::snprintf(time_text, sizeof time_text, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, microseconds);

    std::string line = R"({"ts":")";
    line += time_text;
    line += R"(","level":")";
    const auto level = spdlog::level::to_string_view(message.level);
    line.append(level.data(), level.size());
    line += R"(","msg":)";
    line += json_quote(text);
    line += fields;
    line += "}\n";
    destination.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  return std::ranges::any_of(
      value, [](char c) { return c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20; });
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        quoted += "\\r";
        break;
      case '\t':
        quoted += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          quoted += escaped;
        } else {
          quoted += c;
        }
    }
  }
  quoted += '"';
  return quoted;
}

void configure_logging(LogFormat format, spdlog::level::level_enum level) {
  current_format = format;
  spdlog::set_level(level);
  if (format == LogFormat::json) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%f %^%l%$ %v"));
  }
}

LogFormat log_format() { return current_format; }

void log(spdlog::level::level_enum level, std::string_view message, std::initializer_list<LogField> fields) {
  log(level, message, std::span<const LogField>(fields.begin(), fields.size()));
}

void log(spdlog::level::level_enum level, std::string_view message, std::span<const LogField> fields) {
  if (!spdlog::should_log(level)) return;
  std::string payload(message);
  if (current_format == LogFormat::json) {
    payload += kFieldSeparator;
    for (const auto& field : fields) {
      payload += ',';
      payload += json_quote(field.key);
      payload += ':';
      payload += json_quote(field.value);
    }
  } else {
    for (const auto& field : fields) {
      payload += ' ';
      payload.append(field.key);
      payload += '=';
      payload += needs_quotes(field.value) ? json_quote(field.value) : field.value;
    }
  }
  spdlog::log(level, "{}", payload);
}

}  // namespace myop::runtime
