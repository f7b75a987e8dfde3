// The lists the docs keep of the source tree and of themselves name everything there is: each layer
// folder of src/ in README.md's and design.md's layer lists and architecture.md's drawing, each folder
// of src/runtime/ in architecture.md's table, each page of docs/ in README.md's documentation list and
// in design.md's layout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "docs/markdown.h"
#include "packaging/packaging_files.h"

using namespace myop;

namespace {

// The paragraph of `text` that starts with `opening` (up to the next blank line).
std::string paragraph(const std::string& text, const std::string& opening) {
  const auto start = text.find(opening);
  if (start == std::string::npos) return {};
  const auto end = text.find("\n\n", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

TEST_CASE("docs: every layer of src/ is in README.md's, design.md's and architecture.md's layer lists",
          "[docs]") {
  const auto root = packaging::repository_root();
  const std::string readme = paragraph(packaging::read_text(root / "README.md"), "Layers under `src/`");
  // design.md's numbered list under "Layers inside `src/`".
  const std::string layout = docs::section(packaging::read_text(root / "docs/design.md"), "## Layout");
  const std::string architecture =
      docs::section(packaging::read_text(root / "docs/architecture.md"), "## The layers");
  REQUIRE_FALSE(readme.empty());
  REQUIRE_FALSE(layout.empty());
  REQUIRE_FALSE(architecture.empty());
  std::size_t layers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "src")) {
    if (!entry.is_directory()) continue;
    ++layers;
    const std::string name = entry.path().filename().string() + "/";
    INFO("src/" << name << " is a layer");
    CHECK(readme.find("`" + name + "`") != std::string::npos);
    CHECK(layout.find("`" + name + "`") != std::string::npos);
    CHECK(architecture.find("  " + name) != std::string::npos);
  }
  CHECK(layers >= 6);
}

TEST_CASE("docs: architecture.md's table of runtime/'s folders names each folder there is, and no other",
          "[docs]") {
  const auto root = packaging::repository_root();
  const std::string inside =
      docs::section(packaging::read_text(root / "docs/architecture.md"), "## Inside runtime/");
  REQUIRE_FALSE(inside.empty());
  std::set<std::string> in_table;
  for (const auto& row : docs::table_rows(inside)) {
    REQUIRE_FALSE(row.empty());
    in_table.insert(row.front());
  }
  std::set<std::string> folders;
  for (const auto& entry : std::filesystem::directory_iterator(root / "src/runtime")) {
    if (entry.is_directory()) folders.insert("`" + entry.path().filename().string() + "/`");
  }
  CHECK(folders.size() >= 8);
  CHECK(in_table == folders);
}

TEST_CASE("docs: every page of docs/ is in README.md's documentation list and design.md's layout", "[docs]") {
  const auto root = packaging::repository_root();
  const std::string readme = docs::section(packaging::read_text(root / "README.md"), "## Documentation");
  const std::string layout = docs::section(packaging::read_text(root / "docs/design.md"), "## Layout");
  std::size_t pages = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "docs")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".md") continue;
    ++pages;
    const std::string name = entry.path().filename().string();
    INFO("docs/" << name);
    CHECK(readme.find("(docs/" + name + ")") != std::string::npos);
    CHECK(layout.find(name) != std::string::npos);
  }
  CHECK(pages >= 10);
}
