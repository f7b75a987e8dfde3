#include "kube/request_span.h"

#include <vector>

namespace myop::kube {
namespace {

std::vector<std::string_view> segments_of(std::string_view path) {
  std::vector<std::string_view> segments;
  while (!path.empty()) {
    const auto slash = path.find('/');
    if (slash != 0) segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

}  // namespace

ApiPath parse_api_path(std::string_view path) {
  ApiPath parsed;
  if (const auto query = path.find('?'); query != std::string_view::npos) path = path.substr(0, query);
  const auto segments = segments_of(path);
  std::size_t next = 0;
  if (segments.size() >= 2 && segments[0] == "api") {
    parsed.version = segments[1];
    next = 2;
  } else if (segments.size() >= 3 && segments[0] == "apis") {
    parsed.group = segments[1];
    parsed.version = segments[2];
    next = 3;
  } else {
    return parsed;
  }
  if (segments.size() >= next + 3 && segments[next] == "namespaces") {
    parsed.namespace_name = segments[next + 1];
    next += 2;
  }  // else /api/v1/namespaces/<name> is the Namespace object itself
  if (next < segments.size()) parsed.resource = segments[next];
  if (next + 1 < segments.size()) parsed.name = segments[next + 1];
  if (next + 2 < segments.size()) parsed.subresource = segments[next + 2];
  return parsed;
}

trace::Span start_request_span(std::string_view method, std::string_view path, std::string_view host) {
  if (trace::current_span_context() == nullptr) return {};
  const ApiPath api = parse_api_path(path);
  std::string name(method);
  if (!api.resource.empty()) name += " " + api.resource;
  if (!api.subresource.empty()) name += "/" + api.subresource;
  trace::Span span = trace::start_child_of_current(std::move(name), trace::SpanKind::client);
  if (!span.recording()) return span;
  span.set_attribute("http.request.method", std::string(method));
  span.set_attribute("url.path", std::string(path));
  std::string_view address = host;
  if (const auto colon = host.rfind(':');
      colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos) {
    address = host.substr(0, colon);
    try {
      span.set_attribute("server.port", std::int64_t{std::stoi(std::string(host.substr(colon + 1)))});
    } catch (...) {
      // A host without a numeric port: no server.port.
    }
  }
  span.set_attribute("server.address", std::string(address));
  if (!api.namespace_name.empty()) span.set_attribute("k8s.namespace.name", api.namespace_name);
  if (!api.group.empty()) span.set_attribute("myoperator.api.group", api.group);
  if (!api.resource.empty()) span.set_attribute("myoperator.api.resource", api.resource);
  if (!api.subresource.empty()) span.set_attribute("myoperator.api.subresource", api.subresource);
  return span;
}

void end_request_span(trace::Span& span, int status_code, int resends, std::string_view error_type,
                      std::string_view error_message) {
  if (!span.recording()) return;
  if (status_code > 0) span.set_attribute("http.response.status_code", status_code);
  span.set_attribute("http.request.resend_count", resends);
  // OpenTelemetry's HTTP client convention: 4xx and 5xx and no answer at all are errors of the span.
  if (status_code == 0 || status_code >= 400) {
    const std::string type = status_code == 0 ? std::string(error_type) : std::to_string(status_code);
    span.set_attribute("error.type", type);
    span.set_status(trace::StatusCode::error,
                    status_code == 0 ? std::string(error_message) : "HTTP " + std::to_string(status_code));
  }
  span.end();
}

}  // namespace myop::kube
