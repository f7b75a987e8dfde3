#include "trace/batch_processor.h"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>

#include "recording_exporter.h"
#include "support/fake_clock.h"

using namespace myop::trace;
using namespace std::chrono_literals;
using myop::testing::RecordingExporter;

namespace {

SpanData span_named(const std::string& name) {
  SpanData span;
  span.trace_id = new_trace_id();
  span.span_id = new_span_id();
  span.name = name;
  return span;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("batch processor: full batches are exported in order, the rest at shutdown", "[trace][batch]") {
  auto exporter = std::make_shared<RecordingExporter>();
  BatchOptions options;
  options.max_export_batch_size = 4;
  options.schedule_delay = 1h;  // only full batches and shutdown send
  BatchSpanProcessor processor(exporter, options, nullptr);
  for (int i = 0; i < 10; ++i) processor.submit(span_named("span-" + std::to_string(i)));
  REQUIRE(exporter->wait_for_calls(2));
  CHECK(processor.shutdown(10s));

  const auto batches = exporter->batches();
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].size() == 4);
  CHECK(batches[1].size() == 4);
  CHECK(batches[2].size() == 2);
  const auto spans = exporter->spans();
  for (std::size_t i = 0; i < spans.size(); ++i) CHECK(spans[i].name == "span-" + std::to_string(i));
  CHECK(processor.counts().exported == 10);
  CHECK(processor.counts().dropped_queue_full == 0);
}

TEST_CASE("batch processor: a partial batch is sent after the schedule delay", "[trace][batch]") {
  auto exporter = std::make_shared<RecordingExporter>();
  auto clock = std::make_shared<myop::testing::FakeClock>();
  BatchOptions options;
  options.schedule_delay = 5s;
  options.clock = clock;
  const auto start = clock->now();
  BatchSpanProcessor processor(exporter, options, nullptr);
  processor.submit(span_named("alone"));
  REQUIRE(clock->await_deadline(start + 5s));
  CHECK(exporter->calls() == 0);
  // No shutdown yet: only the schedule can send it.
  clock->advance(5s);
  REQUIRE(exporter->wait_for_calls(1));
  CHECK(exporter->spans().size() == 1);
  processor.shutdown(10s);
}

TEST_CASE("batch processor: a full queue drops and counts instead of blocking the caller", "[trace][batch]") {
  prometheus::Registry registry;
  auto exporter = std::make_shared<RecordingExporter>();
  exporter->hold();  // a collector that does not answer
  BatchOptions options;
  options.max_queue_size = 8;
  options.max_export_batch_size = 2;
  options.schedule_delay = 1h;
  BatchSpanProcessor processor(exporter, options, &registry);
  processor.submit(span_named("first"));
  processor.submit(span_named("second"));  // a full batch: the export starts and hangs
  REQUIRE(exporter->wait_for_calls(1));
  // The exporter holds 2 spans; the queue takes 8 more; the other 90 are dropped. Each submit returned
  // while the export was still hanging (the exporter is held until release() below).
  for (int i = 0; i < 98; ++i) processor.submit(span_named("more"));
  CHECK(processor.counts().dropped_queue_full == 90);
  CHECK(processor.counts().exported == 0);
  CHECK(exporter->calls() == 1);

  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  INFO(text);
  CHECK(has_line(text, R"(myoperator_trace_spans_dropped_total{reason="queue_full"} 90)"));
  CHECK(has_line(text, R"(myoperator_trace_spans_dropped_total{reason="export_failed"} 0)"));

  exporter->release();
  CHECK(processor.shutdown(10s));
  CHECK(processor.counts().exported == 10);
}

TEST_CASE("batch processor: a failing export is retried, then its spans are dropped and counted",
          "[trace][batch]") {
  prometheus::Registry registry;
  auto exporter = std::make_shared<RecordingExporter>();
  exporter->answer(ExportResult::retryable_failure);
  auto clock = std::make_shared<myop::testing::FakeClock>();
  BatchOptions options;
  options.max_export_batch_size = 3;
  options.max_export_attempts = 3;
  options.retry_delay = 1s;
  options.schedule_delay = 1h;
  options.clock = clock;
  const auto start = clock->now();
  BatchSpanProcessor processor(exporter, options, &registry);
  for (int i = 0; i < 3; ++i) processor.submit(span_named("lost"));
  REQUIRE(exporter->wait_for_calls(1));
  REQUIRE(clock->await_deadline(start + 1s));  // each retry after retry_delay on the clock
  CHECK(exporter->calls() == 1);
  clock->advance(1s);
  REQUIRE(exporter->wait_for_calls(2));
  REQUIRE(clock->await_deadline(start + 2s));
  clock->advance(1s);
  REQUIRE(exporter->wait_for_calls(3));
  processor.shutdown(10s);
  CHECK(exporter->calls() == 3);
  CHECK(processor.counts().dropped_export_failed == 3);
  CHECK(processor.counts().exported == 0);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  CHECK(has_line(text, R"(myoperator_trace_spans_dropped_total{reason="export_failed"} 3)"));
}

TEST_CASE("batch processor: a permanent failure is not retried", "[trace][batch]") {
  auto exporter = std::make_shared<RecordingExporter>();
  exporter->answer(ExportResult::permanent_failure);
  BatchOptions options;
  options.max_export_batch_size = 1;
  options.max_export_attempts = 5;
  BatchSpanProcessor processor(exporter, options, nullptr);
  processor.submit(span_named("refused"));
  REQUIRE(exporter->wait_for_calls(1));
  processor.shutdown(10s);
  CHECK(exporter->calls() == 1);
  CHECK(processor.counts().dropped_export_failed == 1);
}

TEST_CASE("batch processor: shutdown gives up at its deadline and counts what was left", "[trace][batch]") {
  prometheus::Registry registry;
  auto exporter = std::make_shared<RecordingExporter>();
  exporter->hold();
  BatchOptions options;
  options.max_export_batch_size = 2;
  options.schedule_delay = 1h;
  BatchSpanProcessor processor(exporter, options, &registry);
  for (int i = 0; i < 5; ++i) processor.submit(span_named("stuck"));
  REQUIRE(exporter->wait_for_calls(1));
  // The export in flight never answers: shutdown cancels it, and the 3 queued spans are dropped.
  CHECK_FALSE(processor.shutdown(10ms));
  const BatchCounts counts = processor.counts();
  CHECK(counts.dropped_shutdown == 3);
  CHECK(counts.dropped_export_failed == 2);  // the cancelled batch
  CHECK(counts.exported == 0);
  processor.submit(span_named("late"));  // after shutdown: dropped, never queued
  CHECK(processor.counts().dropped_queue_full == 1);
}
