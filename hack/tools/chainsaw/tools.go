//go:build tools

// Package tools pins chainsaw, which runs the declarative e2e tests.
package tools

import _ "github.com/kyverno/chainsaw"
