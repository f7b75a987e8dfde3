//go:build tools

// Package tools pins Toxiproxy, the TCP fault proxy that the fault-injection integration tests put
// between the operator and the API server (test/integration/support/fault_proxy.h).
package tools

import _ "github.com/Shopify/toxiproxy/v2/cmd/server"
