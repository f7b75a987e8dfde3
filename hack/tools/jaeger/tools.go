//go:build tools

// Package tools pins Jaeger (cmd/jaeger: the OpenTelemetry-collector-based all-in-one with an
// OTLP receiver, in-memory storage and the query API), which the tracing integration test sends
// the operator's spans to and reads them back from.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
