// docs/design.md's flags table and the command line are the same list: every flag parse_options
// accepts (describe_flags, built from the parser's own definitions) has a row, every row names a
// flag it accepts, with the flag's environment variable, and a default the table gives as a literal
// is the parser's default.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "app/options.h"
#include "docs/markdown.h"
#include "packaging/packaging_files.h"

using namespace myop;

namespace {

struct DocumentedFlag {
  std::string environment;  // the variable column's code span; "" when it has none
  std::string default_cell;
};

// Flag name -> its row of docs/design.md's "## Flags" table (a row may name several flags).
std::map<std::string, DocumentedFlag> documented_flags() {
  const std::string design = packaging::read_text(packaging::repository_root() / "docs/design.md");
  std::map<std::string, DocumentedFlag> flags;
  for (const auto& row : docs::table_rows(docs::section(design, "## Flags"))) {
    REQUIRE(row.size() == 4);  // flag | default | variable | meaning
    const auto variables = docs::code_spans(row[2]);
    for (const std::string& name : docs::code_spans(row[0])) {
      INFO("docs/design.md, flags table: " << name);
      CHECK(name.starts_with("--"));
      CHECK(flags.count(name) == 0);
      flags[name] = {variables.empty() ? std::string() : variables.front(), row[1]};
    }
  }
  return flags;
}

std::variant<app::Options, int> parse(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "my-operator");
  std::vector<char*> argv;
  argv.reserve(arguments.size());
  for (auto& argument : arguments) argv.push_back(argument.data());
  return app::parse_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("docs: every flag parse_options accepts has a row in design.md's flags table, and every row a flag",
          "[docs][app][options]") {
  const auto documented = documented_flags();
  const auto described = app::describe_flags();
  // Neither list can pass by being empty: the operator has dozens of flags.
  REQUIRE(described.size() > 30);
  REQUIRE(documented.size() > 30);

  std::set<std::string> parsed;
  for (const auto& flag : described) {
    parsed.insert(flag.name);
    INFO(flag.name << " is parsed (src/app/options.cpp) but docs/design.md's flags table has no row for it");
    CHECK(documented.count(flag.name) == 1);
  }
  for (const auto& [name, row] : documented) {
    INFO(name << " has a row in docs/design.md's flags table, but parse_options does not accept it");
    CHECK(parsed.count(name) == 1);
  }

  for (const auto& flag : described) {
    const auto row = documented.find(flag.name);
    if (row == documented.end()) continue;
    INFO(flag.name << ": the variable column of docs/design.md says `" << row->second.environment << "`");
    CHECK(row->second.environment == flag.environment);
  }
}

TEST_CASE("docs: a default design.md's flags table gives as a literal is the parser's default",
          "[docs][app][options]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<app::Options>(defaults));
  std::size_t compared = 0;
  for (const auto& [name, row] : documented_flags()) {
    // Only a cell that starts with its literal (`:8080`, `5m` (at least 1s)); prose ("off", "empty:
    // all", "the operator's namespace") says what the parser's empty value means.
    if (!row.default_cell.starts_with("`")) continue;
    const std::string literal = docs::code_spans(row.default_cell).front();
    INFO(name << ": docs/design.md says the default is `" << literal << "`");
    // Given explicitly, the documented default changes nothing.
    const auto given = parse({name + "=" + literal});
    REQUIRE(std::holds_alternative<app::Options>(given));
    CHECK(std::get<app::Options>(given) == std::get<app::Options>(defaults));
    ++compared;
  }
  CHECK(compared > 20);
}
