#include "trace/tracer.h"

#include <catch2/catch.hpp>

#include "recording_exporter.h"

using namespace myop::trace;
using namespace std::chrono_literals;
using myop::testing::RecordingExporter;

namespace {

struct Fixture {
  explicit Fixture(double ratio = 1.0)
      : exporter(std::make_shared<RecordingExporter>()),
        processor(std::make_shared<BatchSpanProcessor>(exporter, BatchOptions{}, nullptr)),
        tracer(RatioSampler(ratio), processor) {}
  // Sends what is queued and returns every span exported.
  std::vector<SpanData> finish() {
    processor->shutdown(10s);
    return exporter->spans();
  }
  std::shared_ptr<RecordingExporter> exporter;
  std::shared_ptr<BatchSpanProcessor> processor;
  Tracer tracer;
};

}  // namespace

TEST_CASE("tracer: spans started under a current span are its children in the same trace",
          "[trace][tracer]") {
  Fixture fixture;
  CHECK(current_span_context() == nullptr);
  CHECK_FALSE(start_child_of_current("outside", SpanKind::client).recording());
  {
    Span root = fixture.tracer.start_span("reconcile", SpanKind::internal, nullptr);
    REQUIRE(root.recording());
    root.set_attribute("k8s.namespace.name", "team-a");
    {
      const CurrentSpan scope(fixture.tracer, root);
      REQUIRE(current_span_context() != nullptr);
      CHECK(current_span_context()->span_id == root.context().span_id);
      Span child = start_child_of_current("GET deployments", SpanKind::client);
      child.set_attribute("http.response.status_code", 200);
      child.set_attribute("myoperator.trigger.initial_list", false);
      child.set_attribute("myoperator.queue.wait_seconds", 0.5);
    }
    CHECK(current_span_context() == nullptr);  // the scope ended
    root.set_status(StatusCode::error, "boom");
  }
  const auto spans = fixture.finish();
  REQUIRE(spans.size() == 2);
  const SpanData& child = spans[0];  // ended first
  const SpanData& root = spans[1];
  CHECK(root.name == "reconcile");
  CHECK_FALSE(root.parent_span_id.valid());
  CHECK(root.status == StatusCode::error);
  CHECK(root.status_message == "boom");
  CHECK(child.name == "GET deployments");
  CHECK(child.kind == SpanKind::client);
  CHECK(child.trace_id == root.trace_id);
  CHECK(child.parent_span_id == root.span_id);
  CHECK(child.start >= root.start);
  CHECK(child.end <= root.end);
  REQUIRE(child.attributes.size() == 3);
  // Each value keeps its type: an int is not a bool, a bool not an int, a double not an int.
  CHECK(std::get<std::int64_t>(child.attributes[0].value) == 200);
  CHECK(std::get<bool>(child.attributes[1].value) == false);
  CHECK(std::get<double>(child.attributes[2].value) == 0.5);
  CHECK(std::get<std::string>(root.attributes[0].value) == "team-a");
}

TEST_CASE("tracer: an unsampled root records nothing, nor do its children", "[trace][tracer]") {
  Fixture fixture(0.0);
  {
    Span root = fixture.tracer.start_span("reconcile", SpanKind::internal, nullptr);
    CHECK_FALSE(root.recording());
    CHECK(root.context().valid());  // its decision still travels (traceparent flag 00)
    CHECK_FALSE(root.context().sampled);
    const CurrentSpan scope(fixture.tracer, root);
    const Span child = start_child_of_current("GET", SpanKind::client);
    CHECK_FALSE(child.recording());
    CHECK(child.context().trace_id == root.context().trace_id);
  }
  CHECK(fixture.finish().empty());
}

TEST_CASE("tracer: nested scopes restore the outer span, and threads do not share one", "[trace][tracer]") {
  Fixture fixture;
  Span outer = fixture.tracer.start_span("outer", SpanKind::internal, nullptr);
  const CurrentSpan outer_scope(fixture.tracer, outer);
  {
    Span inner = start_child_of_current("inner", SpanKind::internal);
    const CurrentSpan inner_scope(fixture.tracer, inner);
    CHECK(current_span_context()->span_id == inner.context().span_id);
  }
  CHECK(current_span_context()->span_id == outer.context().span_id);
  bool other_thread_saw_one = true;
  std::thread([&] { other_thread_saw_one = current_span_context() != nullptr; }).join();
  CHECK_FALSE(other_thread_saw_one);
}
