// The workflows run third-party actions pinned by commit: a moved tag cannot change what runs
// with the registry write token. The one exception is the SLSA generator, which must be
// referenced by its release tag (docs/security.md, "Accepted risks").
#include <catch2/catch.hpp>

#include <regex>

#include "packaging_files.h"

using namespace myop::packaging;

TEST_CASE("packaging: every third-party action of the workflows is pinned by a full commit SHA",
          "[packaging][workflows]") {
  const auto files = yaml_files(repository_root() / ".github/workflows");
  REQUIRE_FALSE(files.empty());
  static const std::regex uses(R"re(uses:\s*([^@\s]+)@(\S+)(\s*#\s*(\S+))?)re");
  static const std::regex sha("[0-9a-f]{40}");
  int actions = 0;
  for (const auto& file : files) {
    const std::string text = read_text(file);
    for (auto match = std::sregex_iterator(text.begin(), text.end(), uses); match != std::sregex_iterator();
         ++match) {
      const std::string action = (*match)[1];
      const std::string ref = (*match)[2];
      INFO(file.filename().string() << ": " << match->str());
      if (action.rfind("./", 0) == 0) continue;  // a workflow of this repository
      ++actions;
      if (action.rfind("slsa-framework/slsa-github-generator/", 0) == 0) {
        CHECK(std::regex_match(ref, std::regex(R"(v[0-9]+\.[0-9]+\.[0-9]+)")));
        continue;
      }
      CHECK(std::regex_match(ref, sha));
      // The tag the SHA was taken from, for the reader and for update tools.
      CHECK(std::regex_match((*match)[4].str(), std::regex(R"(v[0-9]+\.[0-9]+\.[0-9]+)")));
    }
  }
  CHECK(actions > 0);
}
