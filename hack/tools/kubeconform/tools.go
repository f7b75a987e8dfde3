//go:build tools

// Package tools pins the kubeconform command used by the third-party checks (hack/third-party-checks.sh).
package tools

import _ "github.com/yannh/kubeconform/cmd/kubeconform"
