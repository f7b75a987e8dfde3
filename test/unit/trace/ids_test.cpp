#include "trace/ids.h"

#include <catch2/catch.hpp>

#include <set>

using namespace myop::trace;

TEST_CASE("traceparent: formatted as W3C Trace Context version 00 and read back", "[trace][ids]") {
  SpanContext context;
  for (std::size_t i = 0; i < 16; ++i) context.trace_id.bytes[i] = static_cast<std::uint8_t>(0xa0 + i);
  for (std::size_t i = 0; i < 8; ++i) context.span_id.bytes[i] = static_cast<std::uint8_t>(i + 1);
  context.sampled = true;
  const std::string header = format_traceparent(context);
  CHECK(header == "00-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf-0102030405060708-01");

  const auto parsed = parse_traceparent(header);
  REQUIRE(parsed);
  CHECK(parsed->trace_id == context.trace_id);
  CHECK(parsed->span_id == context.span_id);
  CHECK(parsed->sampled);

  context.sampled = false;
  CHECK(format_traceparent(context).ends_with("-00"));
  const auto unsampled = parse_traceparent(format_traceparent(context));
  REQUIRE(unsampled);
  CHECK_FALSE(unsampled->sampled);
}

TEST_CASE("traceparent: malformed headers and zero ids are refused", "[trace][ids]") {
  const std::string good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  REQUIRE(parse_traceparent(good));
  CHECK_FALSE(parse_traceparent(""));
  CHECK_FALSE(parse_traceparent(good.substr(0, 54)));  // short
  CHECK_FALSE(parse_traceparent(good + "-extra"));     // 00 has no more
  CHECK_FALSE(parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));  // uppercase
  CHECK_FALSE(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));  // zero trace
  CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));  // zero span
  CHECK_FALSE(parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));  // version ff
  CHECK_FALSE(parse_traceparent("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  // A later version may carry more fields; its first four are read.
  const auto future = parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more");
  REQUIRE(future);
  CHECK(future->trace_id.hex() == "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST_CASE("new ids are valid, distinct and printed as lowercase hex", "[trace][ids]") {
  std::set<std::string> traces;
  std::set<std::string> spans;
  for (int i = 0; i < 1000; ++i) {
    const TraceId trace_id = new_trace_id();
    const SpanId span_id = new_span_id();
    CHECK(trace_id.valid());
    CHECK(span_id.valid());
    traces.insert(trace_id.hex());
    spans.insert(span_id.hex());
  }
  CHECK(traces.size() == 1000);
  CHECK(spans.size() == 1000);
  const std::string hex = *traces.begin();
  CHECK(hex.size() == 32);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK_FALSE(TraceId{}.valid());
  CHECK_FALSE(SpanId{}.valid());
}
