#include "trace/ids.h"

#include <algorithm>
#include <random>

#include "base/random.h"
#include "base/text.h"

namespace myop::trace {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // the W3C grammar allows lowercase only
}

template <std::size_t N>
bool from_hex(std::string_view text, std::array<std::uint8_t, N>& bytes) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<std::uint8_t>((high << 4) | low);
  }
  return true;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& bytes) {
  std::mt19937_64& random = base::thread_random();
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t word = random();
      for (std::size_t j = i; j < std::min(N, i + 8); ++j, word >>= 8)
        bytes[j] = static_cast<std::uint8_t>(word);
    }
  } while (std::ranges::all_of(bytes, [](std::uint8_t byte) { return byte == 0; }));
}

}  // namespace

bool TraceId::valid() const {
  return std::ranges::any_of(bytes, [](std::uint8_t byte) { return byte != 0; });
}
std::string TraceId::hex() const { return base::to_hex(bytes); }

bool SpanId::valid() const {
  return std::ranges::any_of(bytes, [](std::uint8_t byte) { return byte != 0; });
}
std::string SpanId::hex() const { return base::to_hex(bytes); }

TraceId new_trace_id() {
  TraceId id;
  fill_random(id.bytes);
  return id;
}

SpanId new_span_id() {
  SpanId id;
  fill_random(id.bytes);
  return id;
}

std::string format_traceparent(const SpanContext& context) {
  return "00-" + context.trace_id.hex() + "-" + context.span_id.hex() + (context.sampled ? "-01" : "-00");
}

std::optional<SpanContext> parse_traceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  constexpr std::size_t kLength = 55;
  if (header.size() < kLength || header[2] != '-' || header[35] != '-' || header[52] != '-')
    return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  std::array<std::uint8_t, 1> flags{};
  if (!from_hex(header.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 has exactly 55 characters; a later version may append fields after a dash.
  if (version[0] == 0 ? header.size() != kLength : (header.size() > kLength && header[kLength] != '-'))
    return std::nullopt;
  SpanContext context;
  if (!from_hex(header.substr(3, 32), context.trace_id.bytes) ||
      !from_hex(header.substr(36, 16), context.span_id.bytes) || !from_hex(header.substr(53, 2), flags))
    return std::nullopt;
  if (!context.valid()) return std::nullopt;
  context.sampled = (flags[0] & 0x01) != 0;
  return context;
}

}  // namespace myop::trace
