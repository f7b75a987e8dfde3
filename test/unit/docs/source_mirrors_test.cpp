// Tests mirror src/ (test/CMakeLists.txt, STYLE.md): src/<path>.cpp has test/unit/<path>_test.cpp or
// test/integration/<path>_test.cpp, or a line in test/unmirrored-sources.txt saying what tests it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "packaging/packaging_files.h"

using namespace myop;

namespace {

// Path under src/ -> reason, from test/unmirrored-sources.txt ('#' starts a comment).
std::map<std::string, std::string> unmirrored_list() {
  std::istringstream lines(
      packaging::read_text(packaging::repository_root() / "test/unmirrored-sources.txt"));
  std::map<std::string, std::string> listed;
  std::string line;
  while (std::getline(lines, line)) {
    const auto comment = line.find('#');
    const std::string reason = comment == std::string::npos ? "" : line.substr(comment + 1);
    std::istringstream fields(line.substr(0, comment));
    std::string path;
    if (!(fields >> path)) continue;
    INFO("test/unmirrored-sources.txt: " << line);
    CHECK(listed.count(path) == 0);
    CHECK(reason.find_first_not_of(' ') != std::string::npos);  // says what tests it instead
    listed[path] = reason;
  }
  return listed;
}

bool has_mirror(const std::filesystem::path& root, const std::filesystem::path& source) {
  std::filesystem::path test = source;
  test.replace_filename(source.stem().string() + "_test.cpp");
  return std::filesystem::exists(root / "test/unit" / test) ||
         std::filesystem::exists(root / "test/integration" / test);
}

}  // namespace

TEST_CASE(
    "docs: every source of src/ has a mirroring test, or says in test/unmirrored-sources.txt what tests it",
    "[docs][tests]") {
  const auto root = packaging::repository_root();
  const auto listed = unmirrored_list();
  std::size_t sources = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root / "src")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    const auto source = entry.path().lexically_relative(root / "src");
    ++sources;
    const bool mirrored = has_mirror(root, source);
    const bool is_listed = listed.count(source.string()) == 1;
    INFO("src/" << source.string());
    if (!mirrored) {
      INFO(
          "has no test/unit/ or test/integration/ file of the same path ending in _test.cpp: add one, or a "
          "line to test/unmirrored-sources.txt saying what tests it");
      CHECK(is_listed);
    } else {
      INFO("has a mirroring test now: remove its line from test/unmirrored-sources.txt");
      CHECK_FALSE(is_listed);
    }
  }
  for (const auto& [path, reason] : listed) {
    INFO("test/unmirrored-sources.txt lists src/" << path << ", which does not exist");
    CHECK(std::filesystem::exists(root / "src" / path));
  }
  // The walk found the sources (about ninety), so it cannot pass by finding none.
  CHECK(sources > 60);
}
