// The Argo CD health check of MyResource (config/argocd/resource_customizations/myorg.io/
// MyResource/health.lua) run with Debian's lua5.1 on the sample objects of its
// health_test.yaml, the way Argo CD runs it: the live object as the global `obj`, the
// script's return value as the health.
#include <catch2/catch.hpp>

#include <cctype>
#include <regex>
#include <set>

#include "packaging_files.h"

using namespace myop::packaging;

namespace {

const std::filesystem::path kCheckFolder = "config/argocd/resource_customizations/myorg.io/MyResource";

std::string lua_string(const std::string& text) {
  std::string quoted = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += static_cast<char>(c);
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c < 0x20) {
      quoted += "\\" + std::to_string(c);
    } else {
      quoted += static_cast<char>(c);
    }
  }
  return quoted + "\"";
}

// A YAML scalar as Argo CD sees it after JSON decoding: quoted scalars are strings;
// plain ones are booleans, null, numbers or strings (JSON/YAML 1.2 core schema).
std::string lua_scalar(const YAML::Node& node) {
  const std::string& value = node.Scalar();
  if (node.Tag() == "!") return lua_string(value);
  if (value == "true" || value == "false") return value;
  if (value == "null" || value == "~" || value.empty()) return "nil";
  static const std::regex number(R"(^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$)");
  if (std::regex_match(value, number)) return value;
  return lua_string(value);
}

std::string lua_value(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      std::string table = "{";
      for (const auto& entry : node)
        table += "[" + lua_string(entry.first.Scalar()) + "]=" + lua_value(entry.second) + ",";
      return table + "}";
    }
    case YAML::NodeType::Sequence: {
      std::string table = "{";
      for (const auto& item : node) table += lua_value(item) + ",";
      return table + "}";
    }
    case YAML::NodeType::Scalar:
      return lua_scalar(node);
    default:
      return "nil";
  }
}

struct Health {
  std::string status;
  std::string message;
};

Health run_health_check(const std::filesystem::path& script, const YAML::Node& object) {
  TemporaryFolder folder("myop-lua");
  const auto runner = folder.path() / "runner.lua";
  write_text(runner, "obj = " + lua_value(object) + "\n" + "local hs = dofile(" +
                         lua_string(script.string()) + ")\n" +
                         "io.write(tostring(hs.status), \"\\n\", tostring(hs.message or \"\"))\n");
  const CommandOutput output = run_command("lua5.1 " + shell_quote(runner.string()));
  INFO(output.output);
  REQUIRE(output.exit_code == 0);
  const auto newline = output.output.find('\n');
  REQUIRE(newline != std::string::npos);
  return {output.output.substr(0, newline), output.output.substr(newline + 1)};
}

}  // namespace

TEST_CASE("packaging: the MyResource health check gives the expected health for every sample",
          "[packaging][argocd]") {
  const auto folder = repository_root() / kCheckFolder;
  const YAML::Node tests = YAML::LoadFile((folder / "health_test.yaml").string())["tests"];
  REQUIRE(tests.size() >= 3);
  std::set<std::string> statuses_seen;
  for (const YAML::Node& test : tests) {
    const std::string input = test["inputPath"].as<std::string>();
    SECTION(input) {
      const Health health =
          run_health_check(folder / "health.lua", YAML::LoadFile((folder / input).string()));
      CHECK(health.status == test["healthStatus"]["status"].as<std::string>());
      CHECK(health.message == test["healthStatus"]["message"].as<std::string>(""));
    }
    statuses_seen.insert(test["healthStatus"]["status"].as<std::string>());
  }
  for (const char* status : {"Healthy", "Progressing", "Degraded", "Suspended"}) {
    INFO("no sample expects " << status);
    CHECK(statuses_seen.count(status) == 1);
  }
}

TEST_CASE(
    "packaging: an object whose new generation is not observed yet is Progressing, whatever it said before",
    "[packaging][argocd]") {
  const auto folder = repository_root() / kCheckFolder;
  YAML::Node object = YAML::LoadFile((folder / "testdata/healthy.yaml").string());
  REQUIRE(run_health_check(folder / "health.lua", object).status == "Healthy");
  object["metadata"]["generation"] = object["metadata"]["generation"].as<int>() + 1;
  CHECK(run_health_check(folder / "health.lua", object).status == "Progressing");
}

TEST_CASE("packaging: argocd-cm.yaml carries health.lua verbatim", "[packaging][argocd]") {
  const auto root = repository_root();
  const YAML::Node config_map = YAML::LoadFile((root / "config/argocd/argocd-cm.yaml").string());
  CHECK(config_map["data"]["resource.customizations.health.myorg.io_MyResource"].as<std::string>() ==
        read_text(root / kCheckFolder / "health.lua"));
  CHECK(config_map["data"]["application.resourceTrackingMethod"].as<std::string>() == "annotation");
}
