//go:build tools

// Package tools pins the helm command used by chart tests.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
