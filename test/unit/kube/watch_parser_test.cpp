#include "kube/watch_parser.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using myop::kube::Reason;
using myop::kube::WatchEventType;
using myop::kube::WatchParser;

namespace {

// A watch body as kube-apiserver 1.3x writes it for ConfigMaps with allowWatchBookmarks and
// sendInitialEvents: one JSON document per line, '\n' after each, non-ASCII text, an escaped newline
// inside a value, and a 410 at the end.
const std::string kRecordedStream =
    R"({"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"first","namespace":"w-1","uid":"5e0d6bd2-8f3f-4a7c-9f1b-6b1e1f0c2a11","resourceVersion":"1201","creationTimestamp":"2026-11-29T19:00:00Z","managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","time":"2026-11-29T19:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]},"data":{"a":"1"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"1201","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"first","namespace":"w-1","uid":"5e0d6bd2-8f3f-4a7c-9f1b-6b1e1f0c2a11","resourceVersion":"1202","creationTimestamp":"2026-11-29T19:00:00Z"},"data":{"a":"zwei \u00fcber\nzeilen","b":"caf\u00e9 ☕"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"1250","creationTimestamp":null}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"first","namespace":"w-1","uid":"5e0d6bd2-8f3f-4a7c-9f1b-6b1e1f0c2a11","resourceVersion":"1260","creationTimestamp":"2026-11-29T19:00:00Z"},"data":{"a":"zwei \u00fcber\nzeilen","b":"caf\u00e9 ☕"}}})"
    "\n"
    R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1201 (1255)","reason":"Expired","code":410}})json"
    "\n";

// What a parse produced, in a form that compares equal across chunkings.
std::vector<std::string> drain(WatchParser& parser) {
  std::vector<std::string> results;
  while (auto item = parser.next()) {
    if (item->ok()) {
      const auto& event = item->value();
      results.push_back(std::string(myop::kube::watch_event_type_name(event.type)) + " " +
                        std::string(event.object.name()) + " " + std::string(event.resource_version()) +
                        (event.is_initial_events_end() ? " initial-events-end" : "") + " " +
                        event.object.to_json_string());
    } else {
      results.push_back("error " + std::string(myop::kube::reason_name(item->error().reason)) + " " +
                        std::to_string(item->error().http_code));
    }
  }
  return results;
}

std::vector<std::string> parse_whole(const std::string& stream) {
  WatchParser parser;
  parser.append(stream);
  return drain(parser);
}

}  // namespace

TEST_CASE("watch parser reads a recorded stream given in one chunk", "[kube][watch_parser]") {
  WatchParser parser;
  parser.append(kRecordedStream);

  auto added = parser.next();
  REQUIRE(added.has_value());
  REQUIRE(added->ok());
  CHECK(added->value().type == WatchEventType::Added);
  CHECK(added->value().object.name() == "first");
  CHECK(added->value().object.namespace_name() == "w-1");
  CHECK(added->value().resource_version() == "1201");
  CHECK(added->value().object.view().kind() == "ConfigMap");
  CHECK_FALSE(added->value().is_initial_events_end());

  auto initial_end = parser.next();
  REQUIRE(initial_end->ok());
  CHECK(initial_end->value().type == WatchEventType::Bookmark);
  CHECK(initial_end->value().is_initial_events_end());
  CHECK(initial_end->value().resource_version() == "1201");

  auto modified = parser.next();
  REQUIRE(modified->ok());
  CHECK(modified->value().type == WatchEventType::Modified);
  const auto* value = modified->value().object.view().find({"data", "a"});
  REQUIRE(value != nullptr);
  CHECK(std::string(value->GetString()) ==
        "zwei \xc3\xbc"
        "ber\nzeilen");

  auto bookmark = parser.next();
  REQUIRE(bookmark->ok());
  CHECK(bookmark->value().type == WatchEventType::Bookmark);
  CHECK_FALSE(bookmark->value().is_initial_events_end());
  CHECK(bookmark->value().resource_version() == "1250");

  auto deleted = parser.next();
  REQUIRE(deleted->ok());
  CHECK(deleted->value().type == WatchEventType::Deleted);
  CHECK(deleted->value().resource_version() == "1260");

  auto gone = parser.next();
  REQUIRE(gone.has_value());
  REQUIRE_FALSE(gone->ok());
  CHECK(myop::kube::is_gone(gone->error()));
  CHECK(gone->error().http_code == 410);
  CHECK(gone->error().status_reason == "Expired");
  CHECK(gone->error().message.find("too old resource version") != std::string::npos);

  CHECK_FALSE(parser.next().has_value());
  CHECK(parser.pending_bytes() == 0);
}

TEST_CASE("watch parser gives the same events for a stream split at every offset", "[kube][watch_parser]") {
  const auto expected = parse_whole(kRecordedStream);
  REQUIRE(expected.size() == 6);
  for (std::size_t offset = 0; offset <= kRecordedStream.size(); ++offset) {
    WatchParser parser;
    std::vector<std::string> results;
    parser.append(std::string_view(kRecordedStream).substr(0, offset));
    for (auto& result : drain(parser)) results.push_back(std::move(result));
    parser.append(std::string_view(kRecordedStream).substr(offset));
    for (auto& result : drain(parser)) results.push_back(std::move(result));
    INFO("split at offset " << offset);
    REQUIRE(results == expected);
  }
}

TEST_CASE("watch parser handles byte-by-byte and random chunking", "[kube][watch_parser]") {
  const auto expected = parse_whole(kRecordedStream);
  {
    WatchParser parser;
    std::vector<std::string> results;
    for (char byte : kRecordedStream) {
      parser.append(std::string_view(&byte, 1));
      for (auto& result : drain(parser)) results.push_back(std::move(result));
    }
    CHECK(results == expected);
  }
  std::mt19937 random(12345);
  for (int round = 0; round < 200; ++round) {
    WatchParser parser;
    std::vector<std::string> results;
    std::size_t offset = 0;
    while (offset < kRecordedStream.size()) {
      const std::size_t length = std::uniform_int_distribution<std::size_t>(1, 400)(random);
      parser.append(std::string_view(kRecordedStream).substr(offset, length));
      offset += length;
      for (auto& result : drain(parser)) results.push_back(std::move(result));
    }
    INFO("round " << round);
    REQUIRE(results == expected);
  }
}

TEST_CASE("watch parser: an incomplete last line waits for more bytes", "[kube][watch_parser]") {
  WatchParser parser;
  parser.append(R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})");
  CHECK_FALSE(parser.next().has_value());
  CHECK(parser.pending_bytes() > 0);
  parser.append("\n");
  auto event = parser.next();
  REQUIRE(event.has_value());
  REQUIRE(event->ok());
  CHECK(event->value().object.name() == "a");
  parser.append(R"({"type":"ADDED")");
  parser.reset();
  CHECK(parser.pending_bytes() == 0);
  CHECK_FALSE(parser.next().has_value());
}

TEST_CASE("watch parser skips blank lines and CRLF", "[kube][watch_parser]") {
  WatchParser parser;
  parser.append(
      "\n\r\n  \n"
      R"({"type":"DELETED","object":{"metadata":{"name":"x"}}})"
      "\r\n\n");
  auto event = parser.next();
  REQUIRE(event.has_value());
  REQUIRE(event->ok());
  CHECK(event->value().type == WatchEventType::Deleted);
  CHECK_FALSE(parser.next().has_value());
}

TEST_CASE("watch parser maps ERROR events to typed errors", "[kube][watch_parser]") {
  SECTION("410 with reason Gone") {
    auto result = myop::kube::parse_watch_event(
        R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gone","reason":"Gone","code":410}})");
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().reason == Reason::Gone);
  }
  SECTION("410 without a reason") {
    auto result = myop::kube::parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().reason == Reason::Gone);
  }
  SECTION("500 internal error is not a relist") {
    auto result = myop::kube::parse_watch_event(
        R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"etcd: boom","reason":"InternalError","code":500}})");
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().reason == Reason::InternalError);
    CHECK_FALSE(myop::kube::is_gone(result.error()));
  }
}

TEST_CASE("watch parser reports malformed lines and keeps going", "[kube][watch_parser]") {
  const char* const malformed_lines[] = {
      "not json",
      "[1,2]",
      R"({"object":{}})",
      R"({"type":"ADDED"})",
      R"({"type":"ADDED","object":"x"})",
      R"({"type":7,"object":{}})",
      R"({"type":"RENAMED","object":{}})",
      R"({"type":"ADDED","object":{}} trailing)",
  };
  for (const char* line : malformed_lines) {
    INFO(line);
    WatchParser parser;
    parser.append(std::string(line) + "\n" + R"({"type":"ADDED","object":{"metadata":{"name":"after"}}})" +
                  "\n");
    auto bad = parser.next();
    REQUIRE(bad.has_value());
    REQUIRE_FALSE(bad->ok());
    CHECK(bad->error().message.find("malformed watch event") != std::string::npos);
    auto good = parser.next();
    REQUIRE(good.has_value());
    REQUIRE(good->ok());
    CHECK(good->value().object.name() == "after");
  }
}

TEST_CASE("watch parser refuses a line nested too deep without exhausting the stack",
          "[kube][watch_parser]") {
  WatchParser parser;
  parser.append(R"({"type":"ADDED","object":{"spec":)" + std::string(100'000, '[') + "\n" +
                R"({"type":"ADDED","object":{"metadata":{"name":"after"}}})" + "\n");
  auto bad = parser.next();
  REQUIRE(bad.has_value());
  REQUIRE_FALSE(bad->ok());
  CHECK(bad->error().message.find("malformed watch event: JSON nested deeper than 128") != std::string::npos);
  auto good = parser.next();
  REQUIRE(good.has_value());
  REQUIRE(good->ok());
  CHECK(good->value().object.name() == "after");
}

TEST_CASE("watch parser refuses over-long lines once and resynchronizes", "[kube][watch_parser]") {
  WatchParser parser(64);
  parser.append(std::string(50, 'x'));
  CHECK_FALSE(parser.next().has_value());
  parser.append(std::string(50, 'y'));
  auto too_long = parser.next();
  REQUIRE(too_long.has_value());
  REQUIRE_FALSE(too_long->ok());
  CHECK(too_long->error().message.find("longer than 64") != std::string::npos);
  parser.append(std::string(500, 'z'));
  CHECK_FALSE(parser.next().has_value());
  CHECK(parser.pending_bytes() == 0);  // discarded, not buffered
  parser.append(
      "zz\n"
      R"({"type":"ADDED","object":{}})"
      "\n");
  auto event = parser.next();
  REQUIRE(event.has_value());
  CHECK(event->ok());
}

TEST_CASE("watch events keep a small pool", "[kube][watch_parser]") {
  auto event = myop::kube::parse_watch_event(
      R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"b","resourceVersion":"1"}}})");
  REQUIRE(event.ok());
  CHECK(event->object.allocated_bytes() <= 2048);
}
