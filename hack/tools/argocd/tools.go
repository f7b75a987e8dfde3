//go:build tools

// Package tools pins Argo CD (cmd: one multi-call binary that runs as argocd-repo-server,
// argocd-application-controller or argocd-applicationset-controller depending on the name it
// is started under), which the Argo CD integration tests run against the local control plane.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
