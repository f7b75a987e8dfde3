//go:build tools

// Package tools pins kwok, which simulates nodes and kubelets for tests.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
