#include "kube/watch_parser.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kube/cbor.h"
#include "kube/protobuf.h"

namespace myop::kube {
namespace {

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

std::optional<WatchEventType> event_type_from_name(std::string_view name) {
  if (name == "ADDED") return WatchEventType::Added;
  if (name == "MODIFIED") return WatchEventType::Modified;
  if (name == "DELETED") return WatchEventType::Deleted;
  if (name == "BOOKMARK") return WatchEventType::Bookmark;
  return std::nullopt;
}

Error malformed(const std::string& message, std::string_view line) {
  constexpr std::size_t quoted_bytes = 200;
  std::string quoted(line.substr(0, quoted_bytes));
  if (line.size() > quoted_bytes) quoted += "...";
  return make_error(Reason::Unknown, "malformed watch event: " + message + "; line: " + quoted);
}

}  // namespace

std::string_view watch_event_type_name(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "ADDED";
    case WatchEventType::Modified:
      return "MODIFIED";
    case WatchEventType::Deleted:
      return "DELETED";
    case WatchEventType::Bookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

bool WatchEvent::is_initial_events_end() const {
  return type == WatchEventType::Bookmark &&
         object.view().annotation(kInitialEventsEndAnnotation) == std::optional<std::string_view>("true");
}

namespace {

// The event an envelope {"type", "object"} holds (parsed from JSON or CBOR); `text` quotes it in errors.
Result<WatchEvent> watch_event_of(Object envelope, std::string_view text) {
  if (!envelope.json().IsObject()) return malformed("not an object", text);

  const JsonValue* type = find_member(envelope.json(), "type");
  if (type == nullptr || !type->IsString()) return malformed("no \"type\"", text);
  const std::string_view type_name(type->GetString(), type->GetStringLength());
  JsonValue* object = find_member(envelope.json(), "object");
  if (object == nullptr || !object->IsObject()) return malformed("no \"object\"", text);

  if (type_name == "ERROR") {
    // The server sends a metav1.Status; the HTTP status of the stream itself was 200, so the code comes
    // from the Status (a Status without one is an internal error).
    Error error = error_from_status(*object, 500);
    error.message = "watch: " + error.message;
    return error;
  }
  auto event_type = event_type_from_name(type_name);
  if (!event_type) return malformed("unknown type \"" + std::string(type_name) + "\"", text);

  // Keep only the "object" member, in the pool it was parsed into: no copy.
  JsonValue inner;
  inner = *object;
  envelope.json() = inner;
  return WatchEvent{*event_type, std::move(envelope)};
}

}  // namespace

Result<WatchEvent> parse_watch_event(std::string_view line) {
  auto parsed = Object::parse(line);
  if (!parsed.ok()) return malformed(parsed.error().message, line);
  return watch_event_of(std::move(parsed).value(), line);
}

Result<WatchEvent> parse_cbor_watch_event(std::string_view item, bool drop_managed_fields) {
  auto decoded = decode_cbor_object(item, drop_managed_fields);
  if (!decoded.ok()) return make_error(Reason::Unknown, "malformed watch event: " + decoded.error().message);
  return watch_event_of(std::move(decoded).value(), "(CBOR)");
}

Result<WatchEvent> parse_protobuf_watch_event(std::string_view frame, bool drop_managed_fields) {
  auto decoded = decode_protobuf_watch_event(frame, ProtobufDecodeOptions{drop_managed_fields});
  if (!decoded) {
    Error error = std::move(decoded).error();
    error.message = "malformed watch event: " + error.message;
    return error;
  }
  ProtobufWatchEvent& event = decoded.value();
  if (event.type == "ERROR") {
    Error error = error_from_status(event.object.json(), 500);
    error.message = "watch: " + error.message;
    return error;
  }
  auto event_type = event_type_from_name(event.type);
  if (!event_type)
    return make_error(Reason::Unknown, "malformed watch event: unknown type \"" + event.type + "\"");
  return WatchEvent{*event_type, std::move(event.object)};
}

WatchEncoding watch_encoding_of(std::string_view content_type) {
  if (is_protobuf_media_type(content_type)) return WatchEncoding::Protobuf;
  if (is_cbor_media_type(content_type)) return WatchEncoding::Cbor;
  return WatchEncoding::Json;
}

WatchParser::WatchParser(std::size_t maximum_line_bytes) : maximum_line_bytes_(maximum_line_bytes) {}

void WatchParser::append(std::string_view chunk) {
  // Reclaim the consumed prefix before it grows large; amortized O(1) per byte.
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    scanned_to_ -= std::min(scanned_to_, consumed_);
    consumed_ = 0;
  }
  buffer_.append(chunk);
}

std::optional<Result<WatchEvent>> WatchParser::next() {
  switch (encoding_) {
    case WatchEncoding::Protobuf:
      return next_frame();
    case WatchEncoding::Cbor:
      return next_cbor_item();
    case WatchEncoding::Json:
      break;
  }
  return next_line();
}

std::optional<Result<WatchEvent>> WatchParser::next_cbor_item() {
  if (cbor_broken_) {
    // Nothing after a malformed item can be trusted (a sequence has no resynchronisation point): the
    // rest is dropped until reset(), for the caller to reconnect.
    consumed_ = buffer_.size();
    return std::nullopt;
  }
  const std::string_view pending = std::string_view(buffer_).substr(consumed_);
  if (pending.empty()) return std::nullopt;
  // A sequence says nowhere how long an item is but in its own heads: find its end first (no tree).
  // An item is re-scanned as its chunks arrive; items are small next to the chunks.
  auto size = cbor_item_size(pending.substr(0, std::min(pending.size(), maximum_line_bytes_ + 1)));
  if (!size.ok()) {
    consumed_ = buffer_.size();
    cbor_broken_ = true;
    return Result<WatchEvent>(make_error(Reason::Unknown, "malformed watch event: " + size.error().message));
  }
  if (!size.value()) {
    if (pending.size() <= maximum_line_bytes_) return std::nullopt;
    consumed_ = buffer_.size();
    cbor_broken_ = true;
    return Result<WatchEvent>(make_error(
        Reason::Unknown,
        "malformed watch event: an item is longer than " + std::to_string(maximum_line_bytes_) + " bytes"));
  }
  consumed_ += *size.value();
  return parse_cbor_watch_event(pending.substr(0, *size.value()), drop_managed_fields_);
}

std::optional<Result<WatchEvent>> WatchParser::next_frame() {
  constexpr std::size_t kLengthBytes = 4;
  if (frame_bytes_to_discard_ > 0) {
    const std::size_t skipped = std::min(frame_bytes_to_discard_, buffer_.size() - consumed_);
    consumed_ += skipped;
    frame_bytes_to_discard_ -= skipped;
    if (frame_bytes_to_discard_ > 0) return std::nullopt;
  }
  const std::string_view pending = std::string_view(buffer_).substr(consumed_);
  if (pending.size() < kLengthBytes) return std::nullopt;
  std::size_t length = 0;
  for (std::size_t i = 0; i < kLengthBytes; ++i)
    length = (length << 8) | static_cast<std::uint8_t>(pending[i]);
  if (length > maximum_line_bytes_) {
    // Unlike a line, a frame says where it ends: skip it and go on with the next one.
    consumed_ += kLengthBytes;
    frame_bytes_to_discard_ = length;
    return Result<WatchEvent>(make_error(
        Reason::Unknown, "malformed watch event: a frame of " + std::to_string(length) +
                             " bytes is longer than " + std::to_string(maximum_line_bytes_) + " bytes"));
  }
  if (pending.size() < kLengthBytes + length) return std::nullopt;
  consumed_ += kLengthBytes + length;
  return parse_protobuf_watch_event(pending.substr(kLengthBytes, length), drop_managed_fields_);
}

std::optional<Result<WatchEvent>> WatchParser::next_line() {
  while (true) {
    const std::string_view pending = std::string_view(buffer_).substr(consumed_);
    const std::size_t already_scanned = std::max(scanned_to_, consumed_) - consumed_;
    const std::size_t newline = pending.find('\n', already_scanned);
    if (newline == std::string_view::npos) {
      scanned_to_ = buffer_.size();
      if (!discarding_long_line_ && pending.size() > maximum_line_bytes_) {
        discarding_long_line_ = true;
        consumed_ = buffer_.size();
        return Result<WatchEvent>(
            make_error(Reason::Unknown, "malformed watch event: a line is longer than " +
                                            std::to_string(maximum_line_bytes_) + " bytes"));
      }
      if (discarding_long_line_) consumed_ = buffer_.size();
      return std::nullopt;
    }
    const std::string_view line = pending.substr(0, newline);
    consumed_ += newline + 1;
    if (discarding_long_line_) {
      discarding_long_line_ = false;  // the rest of the long line ends here
      continue;
    }
    if (line.size() > maximum_line_bytes_) {
      return Result<WatchEvent>(make_error(
          Reason::Unknown,
          "malformed watch event: a line is longer than " + std::to_string(maximum_line_bytes_) + " bytes"));
    }
    if (is_blank(line)) continue;
    return parse_watch_event(line);
  }
}

void WatchParser::reset() {
  buffer_.clear();
  consumed_ = 0;
  scanned_to_ = 0;
  discarding_long_line_ = false;
  frame_bytes_to_discard_ = 0;
  cbor_broken_ = false;
}

}  // namespace myop::kube
