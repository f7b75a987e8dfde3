#!/usr/bin/env bash
# Builds the pinned Go test tools (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok, helm, chainsaw) into .cache/tools/<tool>-<version>-<key>/.
#
# The key is a hash of the tool's module files (go.mod, go.sum, sources) and the
# Go version, so a tool is rebuilt only when its pin changes. Prints nothing but
# progress on stderr; `hack/build-tools.sh --print-bin-dir TOOL` prints the
# folder holding TOOL's binaries (building it first if needed).
#
# Usage: hack/build-tools.sh [TOOL...]        (default: all tools)
#        hack/build-tools.sh --print-bin-dir TOOL
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tools_dir="$repo/hack/tools"
source "$tools_dir/versions.env"
cache_root="${MYOP_TOOLS_CACHE:-$repo/.cache/tools}"
all_tools=(etcd kubernetes kwok helm chainsaw opa syft)

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:--mod=mod} -trimpath"

tool_version() {
  case "$1" in
    etcd) echo "$ETCD_VERSION" ;;
    kubernetes) echo "$KUBERNETES_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    chainsaw) echo "$CHAINSAW_VERSION" ;;
    opa) echo "$OPA_VERSION" ;;
    syft) echo "$SYFT_VERSION" ;;
    *) echo "build-tools: unknown tool '$1' (known: ${all_tools[*]})" >&2; return 1 ;;
  esac
}

tool_key() {
  local tool=$1
  { go env GOVERSION; cat "$tools_dir/$tool"/go.mod "$tools_dir/$tool"/go.sum "$tools_dir/$tool"/*.go;
    cat "$tools_dir/$tool"/patch/* 2>/dev/null || true; } | sha256sum | cut -c1-12
}

bin_dir_of() { echo "$cache_root/$1-$(tool_version "$1")-$(tool_key "$1")/bin"; }

build_tool() {
  local tool=$1 version bin_dir
  version=$(tool_version "$tool")
  bin_dir=$(bin_dir_of "$tool")
  if [ -f "$bin_dir/.complete" ]; then return 0; fi
  echo "build-tools: building $tool $version into $bin_dir (first build only; cached afterwards)" >&2
  rm -rf "$bin_dir" && mkdir -p "$bin_dir"
  local started=$SECONDS
  (
    cd "$tools_dir/$tool"
    case "$tool" in
      etcd)
        go build -o "$bin_dir/etcd" \
          -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$version" . ;;
      kubernetes)
        local minor=${version#v1.}; minor=${minor%%.*}
        local ldflags="-s -w"
        for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
          ldflags+=" -X $package.gitVersion=$version -X $package.gitMajor=1 -X $package.gitMinor=$minor"
          ldflags+=" -X $package.gitTreeState=clean -X $package.buildDate=1970-01-01T00:00:00Z"
        done
        go build -o "$bin_dir/" -ldflags "$ldflags" \
          k8s.io/kubernetes/cmd/kube-apiserver \
          k8s.io/kubernetes/cmd/kube-controller-manager \
          k8s.io/kubernetes/cmd/kube-scheduler ;;
      kwok)
        go build -o "$bin_dir/kwok" \
          -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$version" sigs.k8s.io/kwok/cmd/kwok ;;
      helm)
        go build -o "$bin_dir/helm" \
          -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" helm.sh/helm/v3/cmd/helm ;;
      chainsaw)
        # chainsaw v0.2.12 (the newest served) misses one method that Go 1.26's testing
        # package requires; build a copy of it with that method added (see patch/).
        local source patched=$bin_dir/../src
        source=$(go list -m -f '{{.Dir}}' github.com/kyverno/chainsaw)
        rm -rf "$patched" && mkdir -p "$patched"
        cp -r "$source" "$patched/chainsaw" && chmod -R u+w "$patched/chainsaw"
        cp "$tools_dir/chainsaw/patch/test_deps_module_path.go.in" \
          "$patched/chainsaw/pkg/runner/internal/test_deps_module_path.go"
        cp go.mod go.sum tools.go "$patched/"
        cd "$patched"
        go mod edit -replace "github.com/kyverno/chainsaw=./chainsaw"
        go build -o "$bin_dir/chainsaw" -ldflags "-s -w" github.com/kyverno/chainsaw ;;
      opa)
        go build -o "$bin_dir/opa" -ldflags "-s -w" github.com/open-policy-agent/opa ;;
      syft)
        go build -o "$bin_dir/syft" -ldflags "-s -w -X main.version=$version" github.com/anchore/syft/cmd/syft ;;
    esac
  )
  touch "$bin_dir/.complete"
  echo "build-tools: built $tool in $((SECONDS - started)) s" >&2
}

if [ "${1:-}" = "--print-bin-dir" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 --print-bin-dir TOOL" >&2; exit 2; }
  build_tool "$2"
  bin_dir_of "$2"
  exit 0
fi

for tool in "${@:-${all_tools[@]}}"; do build_tool "$tool"; done
