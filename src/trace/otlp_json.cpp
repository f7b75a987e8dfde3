#include "trace/otlp_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace myop::trace {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(Writer& writer, const std::string& text) {
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void write_key(Writer& writer, const char* key) { writer.Key(key); }

void write_unix_nanoseconds(Writer& writer, std::chrono::system_clock::time_point time) {
  const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch());
  write_string(writer, std::to_string(nanoseconds.count()));
}

void write_attribute(Writer& writer, const Attribute& attribute) {
  writer.StartObject();
  write_key(writer, "key");
  write_string(writer, attribute.key);
  write_key(writer, "value");
  writer.StartObject();
  std::visit(
      [&writer](const auto& value) {
        using Value = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, std::string>) {
          write_key(writer, "stringValue");
          write_string(writer, value);
        } else if constexpr (std::is_same_v<Value, std::int64_t>) {
          write_key(writer, "intValue");  // int64 is a string in the protobuf JSON mapping
          write_string(writer, std::to_string(value));
        } else if constexpr (std::is_same_v<Value, double>) {
          write_key(writer, "doubleValue");
          writer.Double(value);
        } else {
          write_key(writer, "boolValue");
          writer.Bool(value);
        }
      },
      attribute.value);
  writer.EndObject();
  writer.EndObject();
}

void write_attributes(Writer& writer, const std::vector<Attribute>& attributes) {
  write_key(writer, "attributes");
  writer.StartArray();
  for (const auto& attribute : attributes) write_attribute(writer, attribute);
  writer.EndArray();
}

// opentelemetry-proto's Span.SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer,
// 5 consumer.
int kind_number(SpanKind kind) {
  switch (kind) {
    case SpanKind::internal:
      return 1;
    case SpanKind::server:
      return 2;
    case SpanKind::client:
      return 3;
    case SpanKind::producer:
      return 4;
    case SpanKind::consumer:
      return 5;
  }
  return 0;
}

// Status.StatusCode: 0 unset, 1 ok, 2 error.
int status_number(StatusCode code) {
  switch (code) {
    case StatusCode::unset:
      return 0;
    case StatusCode::ok:
      return 1;
    case StatusCode::error:
      return 2;
  }
  return 0;
}

void write_span(Writer& writer, const SpanData& span) {
  writer.StartObject();
  write_key(writer, "traceId");
  write_string(writer, span.trace_id.hex());
  write_key(writer, "spanId");
  write_string(writer, span.span_id.hex());
  if (span.parent_span_id.valid()) {
    write_key(writer, "parentSpanId");
    write_string(writer, span.parent_span_id.hex());
  }
  write_key(writer, "name");
  write_string(writer, span.name);
  write_key(writer, "kind");
  writer.Int(kind_number(span.kind));
  write_key(writer, "startTimeUnixNano");
  write_unix_nanoseconds(writer, span.start);
  write_key(writer, "endTimeUnixNano");
  write_unix_nanoseconds(writer, span.end);
  write_attributes(writer, span.attributes);
  write_key(writer, "status");
  writer.StartObject();
  write_key(writer, "code");
  writer.Int(status_number(span.status));
  if (!span.status_message.empty()) {
    write_key(writer, "message");
    write_string(writer, span.status_message);
  }
  writer.EndObject();
  writer.EndObject();
}

}  // namespace

std::string encode_otlp_json(const std::vector<SpanData>& spans, const ResourceInfo& resource) {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  writer.StartObject();
  write_key(writer, "resourceSpans");
  writer.StartArray();
  writer.StartObject();
  write_key(writer, "resource");
  writer.StartObject();
  std::vector<Attribute> resource_attributes{{"service.name", resource.service_name}};
  if (!resource.service_version.empty())
    resource_attributes.push_back({"service.version", resource.service_version});
  write_attributes(writer, resource_attributes);
  writer.EndObject();
  write_key(writer, "scopeSpans");
  writer.StartArray();
  writer.StartObject();
  write_key(writer, "scope");
  writer.StartObject();
  write_key(writer, "name");
  write_string(writer, resource.scope_name);
  writer.EndObject();
  write_key(writer, "spans");
  writer.StartArray();
  for (const auto& span : spans) write_span(writer, span);
  writer.EndArray();
  writer.EndObject();
  writer.EndArray();
  writer.EndObject();
  writer.EndArray();
  writer.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace myop::trace
