#pragma once
// Text helpers shared by the layers.
#include <cctype>
#include <span>
#include <string>
#include <string_view>

namespace myop::base {

// `text` without its leading and trailing white space (std::isspace: space, \t, \n, \v, \f, \r).
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
  return text;
}

// A Content-Type's media type without its parameters and white space: "application/cbor-seq" of
// "application/cbor-seq; charset=x". Compared as the API server writes them (lower case).
inline std::string_view media_type(std::string_view content_type) {
  return trim(content_type.substr(0, content_type.find(';')));
}

// RFC 3986 percent-encoding: every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~) and those of
// `also_kept` becomes %XX (upper-case hex). A query's names and values keep nothing more; a path
// segment may keep ":@" (pchar), as Kubernetes names of RBAC objects ("system:node:a") are sent.
inline std::string percent_encode(std::string_view text, std::string_view also_kept = {}) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (const char character : text) {
    const auto byte = static_cast<unsigned char>(character);
    const bool unreserved = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' || byte == '_' ||
                            byte == '~' || also_kept.find(character) != std::string_view::npos;
    if (unreserved) {
      encoded += character;
    } else {
      encoded += '%';
      encoded += kHex[byte >> 4];
      encoded += kHex[byte & 0x0F];
    }
  }
  return encoded;
}

// How to_hex writes bytes: lower case by default; `separator` between bytes ("AB:CD" fingerprints).
struct HexStyle {
  bool upper_case = false;
  std::string_view separator;
};

// `bytes` as hexadecimal digits, two per byte.
inline std::string to_hex(std::span<const unsigned char> bytes, HexStyle style = {}) {
  const char* digits = style.upper_case ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * (2 + style.separator.size()));
  for (std::size_t index = 0; index < bytes.size(); ++index) {
    if (index != 0) text += style.separator;
    text += digits[bytes[index] >> 4];
    text += digits[bytes[index] & 0x0F];
  }
  return text;
}

}  // namespace myop::base
