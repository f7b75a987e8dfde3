#!/usr/bin/env bash
# Builds the pinned Go test tools (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok, helm, chainsaw, opa, syft, jaeger, argocd, kubeconform, toxiproxy) into .cache/tools/<tool>-<version>-<key>/.
#
# The key is a hash of the tool's module files (go.mod, go.sum, sources) and the
# Go version (the tool's own toolchain, see tool_toolchain), so a tool is rebuilt only when its
# pin changes. Prints nothing but
# progress on stderr; `hack/build-tools.sh --print-bin-dir TOOL` prints the
# folder holding TOOL's binaries (building it first if needed).
#
# Usage: hack/build-tools.sh [TOOL...]        (default: all tools, the control plane's first)
#        hack/build-tools.sh --print-bin-dir TOOL
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tools_dir="$repo/hack/tools"
source "$tools_dir/versions.env"
cache_root="${MYOP_TOOLS_CACHE:-$repo/.cache/tools}"
# In the order the tests need them: the control plane first (every integration fixture), the fault
# proxy (lane B's first cases), syft (the SBOM unit test, beside the lanes), then the tools of lane A's
# cases in their order (helm, kubeconform, OPA, Jaeger, Argo CD; chainsaw's stories come last).
all_tools=(etcd kubernetes kwok toxiproxy syft helm kubeconform opa jaeger argocd chainsaw)

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:--mod=mod} -trimpath"
# The compiler and linker collect garbage only near 3 GiB of heap (each process; two run at a time)
# instead of at every doubling: from a cold cache kwok's build took 206 s of CPU with the default
# (GOGC=100) and 170 s with this, at a peak RSS of 1.0 and 1.1 GB. The builds are most of the CPU
# time of `make test` on a new machine. GOGC and GOMEMLIMIT set in the environment win.
export GOGC="${GOGC:-off}" GOMEMLIMIT="${GOMEMLIMIT:-3GiB}"

tool_version() {
  case "$1" in
    etcd) echo "$ETCD_VERSION" ;;
    kubernetes) echo "$KUBERNETES_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    chainsaw) echo "$CHAINSAW_VERSION" ;;
    opa) echo "$OPA_VERSION" ;;
    syft) echo "$SYFT_VERSION" ;;
    jaeger) echo "$JAEGER_VERSION" ;;
    argocd) echo "$ARGOCD_VERSION" ;;
    kubeconform) echo "$KUBECONFORM_VERSION" ;;
    toxiproxy) echo "$TOXIPROXY_VERSION" ;;
    *) echo "build-tools: unknown tool '$1' (known: ${all_tools[*]})" >&2; return 1 ;;
  esac
}

# The Go toolchain a tool is built with: the installed Go, except where a tool needs a newer
# one (the go command downloads that toolchain once into the module cache).
tool_toolchain() {
  case "$1" in
    argocd) echo "$ARGOCD_GOTOOLCHAIN" ;;
    *) echo local ;;
  esac
}

# The compiler flags: the tools that carry every test's traffic (the control plane, kwok's nodes,
# the fault proxy) are optimised; the others run a few times per test run and are compiled without
# optimisation or inlining, which takes a quarter less CPU on a new machine (kwok: 158 s of user
# time optimised, 114 s with -N -l) where these builds are the longest step of `make test`.
tool_gcflags() {
  case "$1" in
    etcd|kubernetes|kwok|toxiproxy) echo "" ;;
    *) echo "all=-N -l" ;;
  esac
}

tool_key() {
  local tool=$1
  local gcflags
  gcflags=$(tool_gcflags "$tool")
  { GOTOOLCHAIN=$(tool_toolchain "$tool") go env GOVERSION; [ -z "$gcflags" ] || echo "gcflags=$gcflags"; cat "$tools_dir/$tool"/go.mod "$tools_dir/$tool"/go.sum "$tools_dir/$tool"/*.go;
    cat "$tools_dir/$tool"/patch/* 2>/dev/null || true; } | sha256sum | cut -c1-12
}

# The folder of a module required by the current folder's go.mod, downloaded first: `go list -m`
# alone prints an empty Dir for a module that is not in the module cache yet (a new machine).
module_dir() {
  local dir
  go mod download "$1"
  dir=$(go list -m -f '{{.Dir}}' "$1")
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "build-tools: module $1 not found in the module cache after download" >&2; return 1; }
  echo "$dir"
}

bin_dir_of() { echo "$cache_root/$1-$(tool_version "$1")-$(tool_key "$1")/bin"; }

# One build of a tool at a time: `make test` builds the tools in the background
# (hack/with-background-tools) while the tests that need one ask for it with --print-bin-dir; the
# one that comes second waits for the first's build (a lock per tool) instead of building it again.
build_tool() {
  local tool=$1 version bin_dir lock
  version=$(tool_version "$tool")
  bin_dir=$(bin_dir_of "$tool")
  if [ -f "$bin_dir/.complete" ]; then return 0; fi
  mkdir -p "$cache_root"
  lock="$cache_root/.$tool.lock"
  exec {lock_fd}>"$lock"
  if ! flock --nonblock "$lock_fd"; then
    echo "build-tools: waiting for the build of $tool under way (lock $lock)" >&2
    # A build started by hack/with-background-tools runs at the lowest priority: someone now waits
    # for it, so it gets the normal one (best effort: lowering a nice value needs privileges).
    if [ -n "${MYOP_BACKGROUND_TOOLS_GROUP:-}" ]; then
      renice -n 0 -g "$MYOP_BACKGROUND_TOOLS_GROUP" >/dev/null 2>&1 || true
    fi
    flock "$lock_fd"
  fi
  if [ -f "$bin_dir/.complete" ]; then exec {lock_fd}>&-; return 0; fi
  build_tool_locked "$tool" "$version" "$bin_dir"
  exec {lock_fd}>&-
}

build_tool_locked() {
  local tool=$1 version=$2 bin_dir=$3
  echo "build-tools: building $tool $version into $bin_dir (first build only; cached afterwards)" >&2
  rm -rf "$bin_dir" && mkdir -p "$bin_dir"
  local started=$SECONDS
  [ -z "${MYOP_PHASE_LOG:-}" ] || echo "start tools/$tool $(date +%s)" >> "$MYOP_PHASE_LOG"
  (
    cd "$tools_dir/$tool"
    export GOTOOLCHAIN
    GOTOOLCHAIN=$(tool_toolchain "$tool")
    local gcflags
    gcflags=$(tool_gcflags "$tool")
    go_build() { go build -gcflags "$gcflags" "$@"; }
    case "$tool" in
      etcd)
        go_build -o "$bin_dir/etcd" \
          -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$version" . ;;
      kubernetes)
        local minor=${version#v1.}; minor=${minor%%.*}
        local ldflags="-s -w"
        for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
          ldflags+=" -X $package.gitVersion=$version -X $package.gitMajor=1 -X $package.gitMinor=$minor"
          ldflags+=" -X $package.gitTreeState=clean -X $package.buildDate=1970-01-01T00:00:00Z"
        done
        go_build -o "$bin_dir/" -ldflags "$ldflags" \
          k8s.io/kubernetes/cmd/kube-apiserver \
          k8s.io/kubernetes/cmd/kube-controller-manager \
          k8s.io/kubernetes/cmd/kube-scheduler ;;
      kwok)
        go_build -o "$bin_dir/kwok" \
          -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$version" sigs.k8s.io/kwok/cmd/kwok ;;
      helm)
        # The ldflags of helm's own Makefile: without the k8sVersion ones, helm assumes
        # Kubernetes 1.20 for .Capabilities, `helm template` and lint's deprecation checks.
        # They name the minor version of the client-go that helm is built with.
        local client_go k8s_minor ldflags="-s -w"
        client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go)
        k8s_minor=$(echo "$client_go" | cut -d. -f2)
        [[ "$k8s_minor" =~ ^[0-9]+$ ]] || { echo "build-tools: cannot read client-go's minor from '$client_go'" >&2; exit 1; }
        ldflags+=" -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
        for package in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
          ldflags+=" -X $package.k8sVersionMajor=1 -X $package.k8sVersionMinor=$k8s_minor"
        done
        go_build -o "$bin_dir/helm" -ldflags "$ldflags" helm.sh/helm/v3/cmd/helm ;;
      chainsaw)
        # chainsaw v0.2.12 (the newest served) misses one method that Go 1.26's testing
        # package requires; build a copy of it with that method added (see patch/).
        local source patched=$bin_dir/../src
        source=$(module_dir github.com/kyverno/chainsaw)
        rm -rf "$patched" && mkdir -p "$patched"
        cp -r "$source" "$patched/chainsaw" && chmod -R u+w "$patched/chainsaw"
        cp "$tools_dir/chainsaw/patch/test_deps_module_path.go.in" \
          "$patched/chainsaw/pkg/runner/internal/test_deps_module_path.go"
        cp go.mod go.sum tools.go "$patched/"
        cd "$patched"
        go mod edit -replace "github.com/kyverno/chainsaw=./chainsaw"
        go_build -o "$bin_dir/chainsaw" -ldflags "-s -w" github.com/kyverno/chainsaw ;;
      opa)
        go_build -o "$bin_dir/opa" -ldflags "-s -w" github.com/open-policy-agent/opa ;;
      syft)
        go_build -o "$bin_dir/syft" -ldflags "-s -w -X main.version=$version" github.com/anchore/syft/cmd/syft ;;
      jaeger)
        go_build -o "$bin_dir/jaeger" -ldflags "-s -w" github.com/jaegertracing/jaeger/cmd/jaeger ;;
      argocd)
        # One binary for every Argo CD component; it picks the component from the name it is
        # started under (argv[0]), so the components are symlinks to it.
        go_build -o "$bin_dir/argocd" \
          -ldflags "-s -w -X github.com/argoproj/argo-cd/v3/common.version=${version#v}" \
          github.com/argoproj/argo-cd/v3/cmd
        for component in argocd-repo-server argocd-application-controller argocd-applicationset-controller; do
          ln -s argocd "$bin_dir/$component"
        done ;;
      kubeconform)
        go_build -o "$bin_dir/kubeconform" -ldflags "-s -w" github.com/yannh/kubeconform/cmd/kubeconform ;;
      toxiproxy)
        go_build -o "$bin_dir/toxiproxy-server" -ldflags "-s -w -X github.com/Shopify/toxiproxy/v2.Version=$version" \
          github.com/Shopify/toxiproxy/v2/cmd/server ;;
    esac
  )
  touch "$bin_dir/.complete"
  echo "build-tools: built $tool in $((SECONDS - started)) s" >&2
  [ -z "${MYOP_PHASE_LOG:-}" ] || echo "end tools/$tool $((SECONDS - started)) 0" >> "$MYOP_PHASE_LOG"
}

if [ "${1:-}" = "--print-bin-dir" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 --print-bin-dir TOOL" >&2; exit 2; }
  build_tool "$2"
  bin_dir_of "$2"
  exit 0
fi

for tool in "${@:-${all_tools[@]}}"; do build_tool "$tool"; done
