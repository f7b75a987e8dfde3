// Incremental parser for a watch response body, arriving in chunks cut anywhere (an event may span
// chunks, a chunk may hold many events), in either encoding the API server streams:
//   - JSON: newline-delimited, one {"type": ..., "object": ...} per line;
//   - protobuf (application/vnd.kubernetes.protobuf;stream=watch, built-in kinds): frames of a 4-byte
//     big-endian length and a metav1.WatchEvent (kube/protobuf.h);
//   - CBOR (application/cbor-seq, custom resources where the server has the CBORServingAndStorage
//     gate): a sequence of data items, each a {"type", "object"} map (kube/cbor.h).
// The encoding is the answer's Content-Type (set_encoding, before the first chunk); JSON by default.
//
// Feed chunks with `append` and take complete events with `next` until it returns nullopt. An ERROR
// event carries a metav1.Status and comes out as the typed Error it describes (410 Gone/Expired ->
// Reason::Gone: the resourceVersion is too old, relist). A malformed line comes out as an Error too
// (Reason::Unknown); the stream cannot be trusted after it, so the caller should reconnect.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/object.h"

namespace myop::kube {

enum class WatchEventType { Added, Modified, Deleted, Bookmark };

std::string_view watch_event_type_name(WatchEventType type);  // "ADDED", ...

// The annotation that marks the BOOKMARK ending the initial events of a WatchList.
inline constexpr std::string_view kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

struct WatchEvent {
  WatchEventType type = WatchEventType::Added;
  // The object as the server sent it. For a BOOKMARK only apiVersion, kind and metadata.resourceVersion
  // (and annotations) are set.
  Object object;

  std::string_view resource_version() const { return object.resource_version(); }
  // A BOOKMARK annotated k8s.io/initial-events-end: "true".
  bool is_initial_events_end() const;
};

// Largest line (or protobuf frame) accepted: one object's limit (kube/json_parser.h), which bounds the
// parse of each event too.
inline constexpr std::size_t kDefaultMaximumWatchLineBytes = kMaximumObjectJsonBytes;

enum class WatchEncoding { Json, Protobuf, Cbor };

// The encoding of a watch answer's Content-Type (protobuf for application/vnd.kubernetes.protobuf, CBOR
// for application/cbor-seq, JSON for anything else).
WatchEncoding watch_encoding_of(std::string_view content_type);

class WatchParser {
 public:
  explicit WatchParser(std::size_t maximum_line_bytes = kDefaultMaximumWatchLineBytes);

  // Protobuf and CBOR events skip metadata.managedFields instead of building it (for a cache, which drops
  // it anyway); JSON events keep it.
  void set_drop_managed_fields(bool drop) { drop_managed_fields_ = drop; }

  // The encoding of what follows; reset() keeps it.
  void set_encoding(WatchEncoding encoding) { encoding_ = encoding; }
  WatchEncoding encoding() const { return encoding_; }

  void append(std::string_view chunk);

  // The next complete event, or nullopt when more bytes are needed. After an over-long line the parser
  // yields that error once and then discards input until the next newline (the frame's end).
  std::optional<Result<WatchEvent>> next();

  // Bytes received but not yet part of a complete line.
  std::size_t pending_bytes() const { return buffer_.size() - consumed_; }

  // Drops all buffered bytes (for a new connection).
  void reset();

 private:
  std::string buffer_;
  std::size_t consumed_ = 0;    // bytes of buffer_ already handed out as lines
  std::size_t scanned_to_ = 0;  // no newline in buffer_[consumed_, scanned_to_): a long line is scanned once
  std::size_t maximum_line_bytes_;
  bool discarding_long_line_ = false;
  WatchEncoding encoding_ = WatchEncoding::Json;
  std::size_t frame_bytes_to_discard_ = 0;  // protobuf: what is left of an over-long frame
  bool drop_managed_fields_ = false;
  bool cbor_broken_ = false;  // a malformed CBOR item was seen: everything until reset() is dropped

  std::optional<Result<WatchEvent>> next_line();
  std::optional<Result<WatchEvent>> next_frame();
  std::optional<Result<WatchEvent>> next_cbor_item();
};

// Parses one line (without its newline) of a JSON watch body.
Result<WatchEvent> parse_watch_event(std::string_view line);
// Decodes one data item of a CBOR watch body.
Result<WatchEvent> parse_cbor_watch_event(std::string_view item, bool drop_managed_fields = false);
// Decodes one frame (without its length) of a protobuf watch body.
Result<WatchEvent> parse_protobuf_watch_event(std::string_view frame, bool drop_managed_fields = false);

}  // namespace myop::kube
