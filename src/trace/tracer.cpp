#include "trace/tracer.h"

namespace myop::trace {
namespace {

struct ThreadContext {
  Tracer* tracer = nullptr;
  SpanContext context;
};

thread_local ThreadContext current;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

}  // namespace

Span::Span(Tracer* tracer, SpanContext context, std::unique_ptr<SpanData> data)
    : tracer_(tracer), context_(context), data_(std::move(data)) {}

Span::Span(Span&& other) noexcept
    : tracer_(other.tracer_), context_(other.context_), data_(std::move(other.data_)) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    tracer_ = other.tracer_;
    context_ = other.context_;
    data_ = std::move(other.data_);
  }
  return *this;
}

Span::~Span() { end(); }

void Span::set_attribute_value(std::string key, AttributeValue value) {
  if (data_) data_->attributes.push_back({std::move(key), std::move(value)});
}

void Span::set_status(StatusCode code, std::string message) {
  if (!data_) return;
  data_->status = code;
  data_->status_message = code == StatusCode::error ? std::move(message) : std::string();
}

void Span::end(std::chrono::system_clock::time_point end_time) {
  if (!data_) return;
  data_->end = std::max(end_time, data_->start);
  tracer_->finish(std::move(data_));
}

Tracer::Tracer(RatioSampler sampler, std::shared_ptr<BatchSpanProcessor> processor)
    : sampler_(sampler), processor_(std::move(processor)) {}

Span Tracer::start_span(std::string name, SpanKind kind, const SpanContext* parent,
                        std::chrono::system_clock::time_point start) {
  const bool has_parent = parent != nullptr && parent->valid();
  SpanContext context;
  context.trace_id = has_parent ? parent->trace_id : new_trace_id();
  context.span_id = new_span_id();
  context.sampled = sampler_.should_sample(context.trace_id, has_parent ? parent : nullptr);
  if (!context.sampled) return Span(this, context, nullptr);
  auto data = std::make_unique<SpanData>();
  data->trace_id = context.trace_id;
  data->span_id = context.span_id;
  if (has_parent) data->parent_span_id = parent->span_id;
  data->name = std::move(name);
  data->kind = kind;
  data->start = start;
  return Span(this, context, std::move(data));
}

void Tracer::finish(std::unique_ptr<SpanData> data) { processor_->submit(std::move(*data)); }

CurrentSpan::CurrentSpan(Tracer& tracer, const Span& span)
    : previous_tracer_(current.tracer), previous_context_(current.context) {
  current.tracer = &tracer;
  current.context = span.context();
}

CurrentSpan::~CurrentSpan() {
  current.tracer = previous_tracer_;
  current.context = previous_context_;
}

const SpanContext* current_span_context() {
  return current.tracer != nullptr && current.context.valid() ? &current.context : nullptr;
}

Span start_child_of_current(std::string name, SpanKind kind) {
  if (current.tracer == nullptr || !current.context.valid()) return {};
  return current.tracer->start_span(std::move(name), kind, &current.context);
}

}  // namespace myop::trace
