#pragma once
// Starting and ending spans, and the current span of a thread.
//
// Context propagation is thread-local: a CurrentSpan scope makes a span the parent of every span
// started on that thread (start_child_of_current) until the scope ends. That fits how the operator
// runs: a reconcile runs start to end on one worker thread, and the API client's calls block that
// thread (kube/transport.h), so the API calls made inside a reconcile find the reconcile's span without
// a context argument on every client call. Work handed to another thread must carry a SpanContext
// explicitly (none does today). Nothing is current on a thread that no scope covers (watch threads),
// so their requests record nothing.
//
// With no Tracer (tracing off) nothing is ever current, and start_child_of_current costs a
// thread-local read.
#include <chrono>
#include <memory>
#include <string>

#include "trace/batch_processor.h"
#include "trace/ids.h"
#include "trace/sampler.h"
#include "trace/span_data.h"

namespace myop::trace {

class Tracer;

// A started span. Records attributes and ends once, on end() or when it goes away. A span that was not
// sampled (or came from no tracer) records nothing and costs nothing but its context.
class Span {
 public:
  Span() = default;
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span();

  bool recording() const { return data_ != nullptr; }
  // Valid for a sampled span and for an unsampled child of a valid context (its flag says so).
  const SpanContext& context() const { return context_; }

  // One overload per value type, so no argument converts to an unintended one (bool to int, double
  // to int).
  void set_attribute(std::string key, std::string value) {
    set_attribute_value(std::move(key), std::move(value));
  }
  void set_attribute(std::string key, const char* value) {
    set_attribute_value(std::move(key), std::string(value));
  }
  void set_attribute(std::string key, bool value) { set_attribute_value(std::move(key), value); }
  void set_attribute(std::string key, int value) { set_attribute_value(std::move(key), std::int64_t{value}); }
  void set_attribute(std::string key, std::int64_t value) { set_attribute_value(std::move(key), value); }
  void set_attribute(std::string key, double value) { set_attribute_value(std::move(key), value); }
  void set_attribute_value(std::string key, AttributeValue value);
  void set_status(StatusCode code, std::string message = {});
  void end(std::chrono::system_clock::time_point end_time = std::chrono::system_clock::now());

 private:
  friend class Tracer;
  Span(Tracer* tracer, SpanContext context, std::unique_ptr<SpanData> data);

  Tracer* tracer_ = nullptr;
  SpanContext context_;
  std::unique_ptr<SpanData> data_;
};

class Tracer {
 public:
  Tracer(RatioSampler sampler, std::shared_ptr<BatchSpanProcessor> processor);

  // A span with `parent` as its parent, or a new trace when `parent` is null or invalid.
  Span start_span(std::string name, SpanKind kind, const SpanContext* parent,
                  std::chrono::system_clock::time_point start = std::chrono::system_clock::now());

  const RatioSampler& sampler() const { return sampler_; }
  BatchSpanProcessor& processor() { return *processor_; }

 private:
  friend class Span;
  void finish(std::unique_ptr<SpanData> data);

  RatioSampler sampler_;
  std::shared_ptr<BatchSpanProcessor> processor_;
};

// Makes `span` the current span of this thread for the scope's lifetime (nested scopes restore the
// outer one). `span` and its tracer must outlive the scope. An unrecorded span is current too, so its
// unsampled decision reaches the children.
class CurrentSpan {
 public:
  CurrentSpan(Tracer& tracer, const Span& span);
  ~CurrentSpan();
  CurrentSpan(const CurrentSpan&) = delete;
  CurrentSpan& operator=(const CurrentSpan&) = delete;

 private:
  Tracer* previous_tracer_;
  SpanContext previous_context_;
};

// The current span's context on this thread, or null.
const SpanContext* current_span_context();

// A child of this thread's current span; a span that records nothing when there is none (or it was
// not sampled).
Span start_child_of_current(std::string name, SpanKind kind);

}  // namespace myop::trace
