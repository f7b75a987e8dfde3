#include "base/base64.h"

#include <cctype>

namespace myop::base {

std::string encode_base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  encoded.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t at = 0;
  for (; at + 3 <= bytes.size(); at += 3) {
    const unsigned int group = (static_cast<unsigned char>(bytes[at]) << 16U) |
                               (static_cast<unsigned char>(bytes[at + 1]) << 8U) |
                               static_cast<unsigned char>(bytes[at + 2]);
    encoded += kAlphabet[(group >> 18U) & 0x3FU];
    encoded += kAlphabet[(group >> 12U) & 0x3FU];
    encoded += kAlphabet[(group >> 6U) & 0x3FU];
    encoded += kAlphabet[group & 0x3FU];
  }
  const std::size_t left = bytes.size() - at;
  if (left > 0) {
    unsigned int group = static_cast<unsigned char>(bytes[at]) << 16U;
    if (left == 2) group |= static_cast<unsigned char>(bytes[at + 1]) << 8U;
    encoded += kAlphabet[(group >> 18U) & 0x3FU];
    encoded += kAlphabet[(group >> 12U) & 0x3FU];
    encoded += left == 2 ? kAlphabet[(group >> 6U) & 0x3FU] : '=';
    encoded += '=';
  }
  return encoded;
}

std::optional<std::string> decode_base64(std::string_view text) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string decoded;
  unsigned int buffer = 0;
  int bits = 0;
  int padding = 0;
  int symbols = 0;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) continue;
    if (c == '=') {
      ++padding;
      ++symbols;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    const int value = value_of(c);
    if (value < 0) return std::nullopt;
    ++symbols;
    buffer = (buffer << 6) | static_cast<unsigned int>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      decoded += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  if (padding > 2 || symbols % 4 != 0) return std::nullopt;
  return decoded;
}

}  // namespace myop::base
