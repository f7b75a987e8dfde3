#pragma once
// The lines the default logger writes while a LogCapture lives (the logger is swapped in, the
// previous one restored). Other threads may log while the test reads: the sink's own mutex guards
// the text, so reading it is not a race.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>

#include "runtime/logging.h"

namespace myop::testing {

class LogCapture {
 public:
  explicit LogCapture(runtime::LogFormat format = runtime::LogFormat::text)
      : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
    runtime::configure_logging(format, spdlog::level::info);
  }
  ~LogCapture() {
    spdlog::set_default_logger(previous_);
    runtime::configure_logging(runtime::LogFormat::text, spdlog::level::info);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Everything written so far.
  std::string text() const {
    spdlog::default_logger()->flush();
    return sink_->text();
  }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string text() {
      std::lock_guard lock(mutex_);
      return text_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      spdlog::memory_buf_t formatted;
      formatter_->format(message, formatted);
      text_.append(formatted.data(), formatted.size());
    }
    void flush_() override {}

   private:
    std::string text_;
  };

  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace myop::testing
