#pragma once
// Feeds a watch stream to a parser the way a socket would, in pieces, for tests.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kube/errors.h"
#include "kube/watch_parser.h"

namespace myop::testing {

// Appends `stream` to `parser` in pieces of `chunk` bytes and reads every item after each piece. An
// event is what `describe(event)` makes of it; an error reads "error <reason>".
template <typename Describe>
std::vector<std::string> parse_in_chunks(kube::WatchParser& parser, std::string_view stream,
                                         std::size_t chunk, Describe describe) {
  std::vector<std::string> seen;
  for (std::size_t at = 0; at < stream.size(); at += chunk) {
    parser.append(stream.substr(at, chunk));
    while (auto item = parser.next()) {
      if (item->ok()) {
        seen.push_back(describe(item->value()));
      } else {
        seen.push_back("error " + std::string(kube::reason_name(item->error().reason)));
      }
    }
  }
  return seen;
}

}  // namespace myop::testing
