#pragma once
// Reading the facts the docs state in tables and lists, for the tests that hold them to the code
// (flags, metrics, source folders, pages). Header-only so the integration tests can use it too
// (#include "../../unit/docs/markdown.h").
#include <string>
#include <vector>

namespace myop::docs {

// The text of `document` under the heading line `heading` (e.g. "## Flags", which also finds "## Flags
// (CLI11; ...)"), up to the next heading of the same or a higher level; "" when there is none.
inline std::string section(const std::string& document, const std::string& heading) {
  const std::size_t level = heading.find_first_not_of('#');
  std::size_t at = 0;
  while (at < document.size()) {
    const std::size_t end = document.find('\n', at);
    const std::string line = document.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? document.size() : end + 1;
    if (line != heading && !line.starts_with(heading + " ")) continue;
    std::size_t stop = at;
    while (stop < document.size()) {
      const std::size_t next = document.find('\n', stop);
      const std::string candidate =
          document.substr(stop, next == std::string::npos ? std::string::npos : next - stop);
      const std::size_t hashes = candidate.find_first_not_of('#');
      if (hashes > 0 && hashes != std::string::npos && hashes <= level && candidate[hashes] == ' ') break;
      stop = next == std::string::npos ? document.size() : next + 1;
    }
    return document.substr(at, stop - at);
  }
  return {};
}

// The body rows of every table in `text` (a line starting with '|', indented or not), each as its
// cells trimmed; the header row and the |---| row below it are left out. "\|" is a '|' in a cell.
inline std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  const auto trimmed = [](const std::string& cell) {
    const std::size_t first = cell.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return cell.substr(first, cell.find_last_not_of(" \t") - first + 1);
  };
  const auto table_line = [&](const std::string& line) { return trimmed(line).starts_with("|"); };
  const auto separator = [&](const std::string& line) {
    return table_line(line) && trimmed(line).find_first_not_of("|-: ") == std::string::npos;
  };
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!table_line(lines[i]) || separator(lines[i])) continue;
    if (i + 1 < lines.size() && separator(lines[i + 1])) continue;  // a header
    const std::string line = trimmed(lines[i]);
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t c = 1; c < line.size(); ++c) {
      if (line[c] == '\\' && c + 1 < line.size() && line[c + 1] == '|') {
        cell += '|';
        ++c;
      } else if (line[c] == '|') {
        cells.push_back(trimmed(cell));
        cell.clear();
      } else {
        cell += line[c];
      }
    }
    if (!trimmed(cell).empty()) cells.push_back(trimmed(cell));
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The `code` spans of a text, in order: "`--a`, `--b` (x)" -> {"--a", "--b"}.
inline std::vector<std::string> code_spans(const std::string& text) {
  std::vector<std::string> spans;
  for (std::size_t open = text.find('`'); open != std::string::npos;) {
    const std::size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    spans.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('`', close + 1);
  }
  return spans;
}

}  // namespace myop::docs
