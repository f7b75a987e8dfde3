//go:build tools

// Package tools pins syft, which writes the SBOM of the operator's runtime contents (hack/sbom.sh).
package tools

import _ "github.com/anchore/syft/cmd/syft"
