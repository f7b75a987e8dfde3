#include <rapidjson/document.h>
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "runtime/logging.h"
#include "support/log_capture.h"

using namespace myop::runtime;

namespace {

std::string capture(LogFormat format, const std::function<void()>& write) {
  const myop::testing::LogCapture logs(format);
  write();
  return logs.text();
}

}  // namespace

TEST_CASE("JSON logs are one valid object per line with the fields", "[runtime][logging]") {
  const std::string line = capture(LogFormat::json, [] {
    log(spdlog::level::err, "Reconciler error",
        {{"controller", "myresource"}, {"namespace", "team-a"}, {"name", "web"}, {"error", "say \"hi\"\n"}});
  });
  rapidjson::Document document;
  document.Parse(line.c_str());
  REQUIRE_FALSE(document.HasParseError());
  CHECK(std::string(document["msg"].GetString()) == "Reconciler error");
  CHECK(std::string(document["level"].GetString()) == "error");
  CHECK(std::string(document["namespace"].GetString()) == "team-a");
  CHECK(std::string(document["error"].GetString()) == "say \"hi\"\n");
}

TEST_CASE("plain spdlog calls stay valid JSON", "[runtime][logging]") {
  const std::string line = capture(LogFormat::json, [] { spdlog::warn("quote \" and {}", "brace"); });
  rapidjson::Document document;
  document.Parse(line.c_str());
  REQUIRE_FALSE(document.HasParseError());
  CHECK(std::string(document["msg"].GetString()) == "quote \" and brace");
}

TEST_CASE("text logs carry key=value fields", "[runtime][logging]") {
  const std::string line = capture(LogFormat::text, [] {
    log(spdlog::level::info, "Reconcile finished", {{"controller", "c"}, {"name", "two words"}});
  });
  CHECK_THAT(line, Catch::Contains("Reconcile finished controller=c name=\"two words\""));
}
