#pragma once
// Text helpers shared by the layers.
#include <cctype>
#include <string_view>

namespace myop::base {

// `text` without its leading and trailing white space (std::isspace: space, \t, \n, \v, \f, \r).
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
  return text;
}

}  // namespace myop::base
