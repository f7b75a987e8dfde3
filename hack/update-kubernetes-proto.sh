#!/usr/bin/env bash
# Copies the upstream protobuf schema of the built-in kinds the operator reads (k8s.io/api and
# k8s.io/apimachinery generated.proto files, the modules of the pinned Kubernetes version in
# hack/tools/versions.env) into third_party/kubernetes-proto/, where the build compiles them into the
# descriptor set the protobuf decoder uses (src/kube/protobuf.h).
#
# Also writes inline-fields.txt: the fields Go embeds in their parent's JSON (an anonymous struct field with
# `json:""` or `json:",inline"`, e.g. Volume's VolumeSource, Probe's ProbeHandler), which the protobuf
# has as a nested message; the decoder flattens them as the JSON does. And omit-empty-fields.txt: the
# non-pointer fields the JSON leaves out when they are zero (`omitempty` strings, numbers and booleans;
# `omitzero` structs too), which Go's protobuf writes anyway: the decoder leaves them out too, so the
# tree is the JSON's. One line per field: the message's protobuf name and the field's number (and, in
# omit-empty-fields.txt, omitempty or omitzero).
#
# Usage: hack/update-kubernetes-proto.sh          (rewrites the copies from the Go module cache)
#        hack/update-kubernetes-proto.sh --check  (fails when a copy differs from the pinned module)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/tools/versions.env"
# Kubernetes v1.X.Y publishes its staging modules as v0.X.Y.
module_version="v0.${KUBERNETES_VERSION#v1.}"
target="$repo/third_party/kubernetes-proto"
files=(
  api/core/v1 api/apps/v1 api/coordination/v1 api/events/v1
  apimachinery/pkg/apis/meta/v1 apimachinery/pkg/runtime apimachinery/pkg/runtime/schema
  apimachinery/pkg/api/resource apimachinery/pkg/util/intstr
)
check=false
[ "${1:-}" = "--check" ] && check=true

module_dir() {
  (cd "$repo/hack/tools/kubernetes" && GOFLAGS=-mod=mod go mod download -json "k8s.io/$1@$module_version") |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}
declare -A dirs
dirs[api]=$(module_dir api)
dirs[apimachinery]=$(module_dir apimachinery)

# Runs an awk program over the types*.go of every package, with `package` (the protobuf package) and
# `type` (the Go struct a line is in; "" outside one) set for its field rules; prints its sorted output.
struct_fields() {
  local program=$1 path module package
  for path in "${files[@]}"; do
    module=${path%%/*}
    package="k8s.io.$module.${path#*/}"
    [ "$module" = api ] && package="k8s.io.api.${path#api/}"
    package=${package//\//.}
    for go_file in "${dirs[$module]}/${path#*/}"/types*.go; do
      [ -e "$go_file" ] || continue
      awk -v package="$package" '
        /^type [A-Za-z0-9_]+ struct \{/ { type = $2 }
        /^}/ { type = "" }
        '"$program" "$go_file"
    done
  done | LC_ALL=C sort
}

# Anonymous struct fields with an empty or inline json tag and a protobuf tag (TypeMeta has none: it is
# the envelope's).
inline_fields() {
  struct_fields '
    type != "" && /^\t\*?[A-Z][A-Za-z0-9_]*[ \t]+`json:"(,inline)?"[^`]*protobuf:"[a-z0-9]+,[0-9]+/ {
      match($0, /protobuf:"[a-z0-9]+,[0-9]+/)
      tag = substr($0, RSTART, RLENGTH); sub(/.*,/, "", tag)
      print package "." type " " tag
    }'
}

# Named fields that are not pointers, slices or maps, whose json tag has omitempty or omitzero.
omit_empty_fields() {
  struct_fields '
    type != "" && /^\t[A-Z][A-Za-z0-9_]*[ \t]+[^ \t`]+[ \t]+`json:"[^"]*(omitempty|omitzero)[^"]*"[^`]*protobuf:"[a-z0-9]+,[0-9]+/ {
      field_type = $2
      if (field_type ~ /^(\*|\[\]|map\[)/) next
      match($0, /protobuf:"[a-z0-9]+,[0-9]+/)
      tag = substr($0, RSTART, RLENGTH); sub(/.*,/, "", tag)
      print package "." type " " tag " " ($0 ~ /json:"[^"]*omitzero/ ? "omitzero" : "omitempty")
    }'
}

status=0
for list in inline omit-empty; do
  case $list in
    inline) content=$(inline_fields) ;;
    omit-empty) content=$(omit_empty_fields) ;;
  esac
  if $check; then
    if [ "$content" != "$(cat "$target/$list-fields.txt" 2>/dev/null)" ]; then
      echo "update-kubernetes-proto: $target/$list-fields.txt differs from the Go sources of $module_version" >&2
      status=1
    fi
  else
    printf '%s\n' "$content" >"$target/$list-fields.txt"
  fi
done
for path in "${files[@]}"; do
  module=${path%%/*}
  source_file="${dirs[$module]}/${path#*/}/generated.proto"
  copy="$target/k8s.io/$path/generated.proto"
  if $check; then
    if ! cmp -s "$source_file" "$copy"; then
      echo "update-kubernetes-proto: $copy differs from k8s.io/$module@$module_version" >&2
      status=1
    fi
  else
    mkdir -p "$(dirname "$copy")"
    install -m 0644 "$source_file" "$copy"
  fi
done
if ! $check; then
  echo "k8s.io/api and k8s.io/apimachinery $module_version (Kubernetes $KUBERNETES_VERSION)" >"$target/VERSION"
  echo "update-kubernetes-proto: copied ${#files[@]} files of $module_version into $target" >&2
fi
exit $status
