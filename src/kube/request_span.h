#pragma once
// The client span of one API request (with its retries), a child of the thread's current span
// (trace/tracer.h): a reconcile's API calls appear under its `reconcile` span. Named
// "<METHOD> <resource>[/<subresource>]", with OpenTelemetry's HTTP client attributes
// (http.request.method, http.response.status_code, http.request.resend_count, server.address,
// server.port, url.path, error.type) and the Kubernetes ones no convention names
// (k8s.namespace.name, myoperator.api.group, myoperator.api.resource, myoperator.api.subresource).
#include <string>
#include <string_view>

#include "trace/tracer.h"

namespace myop::kube {

// An API path taken apart: "/apis/apps/v1/namespaces/a/deployments/web/status" ->
// {group "apps", version "v1", namespace "a", resource "deployments", name "web", subresource "status"}.
// Fields a path does not have stay empty (a collection has no name; /api has no group).
struct ApiPath {
  std::string group;
  std::string version;
  std::string namespace_name;
  std::string resource;
  std::string name;
  std::string subresource;
};
ApiPath parse_api_path(std::string_view path);

// Nothing recorded (and nothing parsed) when no span is current on this thread.
trace::Span start_request_span(std::string_view method, std::string_view path, std::string_view host);

// `status_code` 0: no HTTP answer; `error_type` (a low-cardinality reason such as "Timeout") and
// `error_message` then say why. `resends`: attempts after the first.
void end_request_span(trace::Span& span, int status_code, int resends, std::string_view error_type,
                      std::string_view error_message);

}  // namespace myop::kube
