//go:build tools

// Package tools pins OPA, which runs the Rego unit tests of config/policy/gatekeeper (`opa test`).
package tools

import _ "github.com/open-policy-agent/opa"
