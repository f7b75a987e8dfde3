// Every Catch2 test name in test/ can be registered with ctest: catch_discover_tests makes one ctest
// test per name, and ctest splits a name at ';' into two tests that then match nothing (both fail,
// and the case itself never runs). A leading '-' reads as an option to the test binary.
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "packaging_files.h"

using namespace myop::packaging;

namespace {

// The name of the TEST_CASE whose parenthesis opens at `at`: its adjacent string literals joined;
// nullopt when the first argument is not a string literal (a macro of the test's own).
std::optional<std::string> literal_name(const std::string& text, std::size_t at) {
  std::string name;
  bool found = false;
  std::size_t i = at;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      found = true;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        name += text[i];
      }
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++i;
    } else {
      break;  // the ',' before the tags, or ')' (or anything that is not a literal)
    }
  }
  if (!found) return std::nullopt;
  return name;
}

// True when only blanks stand between the line's start and `at`.
bool starts_line(const std::string& text, std::size_t at) {
  while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
  return at == 0 || text[at - 1] == '\n';
}

}  // namespace

TEST_CASE("packaging: no test name holds a semicolon or starts with a dash, so ctest registers each as it is",
          "[packaging][tests]") {
  std::size_t names = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(repository_root() / "test")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    const std::string text = read_text(entry.path());
    for (const std::string macro : {"TEST_CASE(", "TEST_CASE_METHOD(", "SCENARIO("}) {
      for (auto at = text.find(macro); at != std::string::npos; at = text.find(macro, at + 1)) {
        if (!starts_line(text, at)) continue;  // a mention in a comment or a string, not a test
        auto start = at + macro.size();
        if (macro == "TEST_CASE_METHOD(") start = text.find(',', start) + 1;  // after the fixture class
        const auto name = literal_name(text, start);
        if (!name) continue;
        ++names;
        INFO(entry.path().lexically_relative(repository_root()).string() << ": \"" << *name << "\"");
        CHECK(name->find(';') == std::string::npos);
        CHECK_FALSE((!name->empty() && name->front() == '-'));
      }
    }
  }
  // The scan found the suite's test cases (hundreds), so it cannot pass by finding none.
  CHECK(names > 400);
}
