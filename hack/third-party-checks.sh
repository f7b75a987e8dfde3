#!/usr/bin/env bash
# Third-party checks of what ships, as a platform team runs them before installing:
#   - checkov (PyPI, pinned below, in a venv under .cache/venv/) over the chart rendered with the
#     default values and with test/third_party/example-values.yaml, over config/ (kustomize builds
#     of config/default, config/metrics-certificate, config/prometheus) and over the Dockerfile;
#   - kubeconform (hack/tools/kubeconform) in strict mode over the same manifests, against JSON
#     schemas generated from the pinned Kubernetes' OpenAPI (the k8s.io/kubernetes module at
#     KUBERNETES_VERSION) and the project's CRD (hack/lib/kubeconform_schemas.py).
# Every checkov finding must be listed in test/third_party/checkov-baseline.txt with its reason;
# a finding not listed fails the run, and so does a listed one that no longer occurs.
#
# Usage: hack/third-party-checks.sh              the checks; exit 1 on a new finding or an invalid object
#        hack/third-party-checks.sh --chart DIR  the same with another copy of the chart
#        hack/third-party-checks.sh --self-test  shows both checks fail: a chart copy without the
#                                                operator's readOnlyRootFilesystem (checkov CKV_K8S_22)
#                                                and with a misspelt field (kubeconform)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/tools/versions.env"
CHECKOV_VERSION=3.3.30
chart="$repo/charts/my-operator"
baseline="$repo/test/third_party/checkov-baseline.txt"
release_namespace=my-operator-system

case "${1:-}" in
  --chart) chart=$(cd "$2" && pwd) ;;
  --self-test)
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/myop-third-party-self-test.XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    cp -r "$chart" "$scratch/my-operator"
    template="$scratch/my-operator/templates/deployment.yaml"
    grep -q '^            readOnlyRootFilesystem: true$' "$template" ||
      { echo "third-party-checks: self-test: the chart no longer sets readOnlyRootFilesystem where expected" >&2; exit 2; }
    sed -i '/^            readOnlyRootFilesystem: true$/d' "$template"
    sed -i 's/^      terminationGracePeriodSeconds: 30$/      terminationGracePeriodSeconds: 30\n      terminationGracePeriodSecond: 30/' "$template"
    set +e
    "$0" --chart "$scratch/my-operator" > "$scratch/output" 2>&1
    status=$?
    set -e
    cat "$scratch/output"
    if [ "$status" -eq 0 ]; then echo "third-party-checks: self-test: the broken chart passed" >&2; exit 1; fi
    for expected in "new checkov finding: CKV_K8S_22" "kubeconform: invalid" "terminationGracePeriodSecond"; do
      grep -q "$expected" "$scratch/output" ||
        { echo "third-party-checks: self-test: the output does not say '$expected'" >&2; exit 1; }
    done
    echo "third-party-checks: self-test: the broken chart fails, naming CKV_K8S_22 and the misspelt field"
    exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--chart DIR | --self-test]" >&2; exit 2 ;;
esac

# checkov in its own venv, installed once per version.
venv="$repo/.cache/venv/checkov-$CHECKOV_VERSION"
if [ ! -f "$venv/.complete" ]; then
  echo "third-party-checks: installing checkov $CHECKOV_VERSION into $venv (first run only)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$CHECKOV_VERSION"
  touch "$venv/.complete"
fi
helm="$("$repo/hack/build-tools.sh" --print-bin-dir helm)/helm"
kubeconform="$("$repo/hack/build-tools.sh" --print-bin-dir kubeconform)/kubeconform"
kubernetes_dir=$(cd "$repo/hack/tools/kubernetes" && GOFLAGS=-mod=mod go mod download k8s.io/kubernetes && GOFLAGS=-mod=mod go list -m -f "{{.Dir}}" k8s.io/kubernetes)
openapi="$kubernetes_dir/api/openapi-spec/v3"
[ -d "$openapi" ] || { echo "third-party-checks: no $openapi (hack/build-tools.sh kubernetes downloads it)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/myop-third-party.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scan" "$work/schemas"
kube_version=${KUBERNETES_VERSION#v}
"$helm" template my-operator "$chart" -n "$release_namespace" --kube-version "$kube_version" \
  > "$work/scan/chart-default.yaml"
"$helm" template my-operator "$chart" -n "$release_namespace" --kube-version "$kube_version" \
  -f "$repo/test/third_party/example-values.yaml" > "$work/scan/chart-example.yaml"
for folder in default metrics-certificate prometheus; do
  kubectl kustomize "$repo/config/$folder" > "$work/scan/config-$folder.yaml"
done
cp "$repo/Dockerfile" "$work/scan/Dockerfile"

failed=0

# kubeconform: every object against the pinned Kubernetes' and the CRD's schemas. The
# prometheus-operator kinds have no schema here; their CRDs check them by server-side dry run
# (helm_chart_test.cpp, kustomize_test.cpp).
"$venv/bin/python" "$repo/hack/lib/kubeconform_schemas.py" "$work/schemas" "$openapi" \
  "$repo/config/crd/myorg.io_myresources.yaml"
if ! "$kubeconform" -strict -summary -output text -skip ServiceMonitor,PrometheusRule \
    -schema-location "$work/schemas/{{ .ResourceKind }}_{{ .Group }}_{{ .ResourceAPIVersion }}.json" \
    "$work"/scan/*.yaml "$repo/config/samples" > "$work/kubeconform.txt" 2>&1; then
  sed 's/^/kubeconform: invalid: /' "$work/kubeconform.txt"
  failed=1
else
  sed 's/^/kubeconform: /' "$work/kubeconform.txt"
fi

# checkov: offline (no guideline download), every finding compared with the baseline.
# By the venv's python, not its bin/checkov: a venv's scripts name the path it was made at, and .cache/
# may be reached by another path (a worktree's link to it) than the one that made it.
(cd "$work/scan" && BC_SKIP_MAPPING=TRUE "$venv/bin/python" -W ignore::SyntaxWarning -m checkov.main \
  --quiet --compact --skip-download --framework kubernetes dockerfile -d . -o json > "$work/checkov.json" 2> "$work/checkov.err") || true
if ! "$venv/bin/python" - "$work/checkov.json" "$baseline" "$work/checkov.err" <<'EOF'
import json, sys

report_path, baseline_path, errors_path = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    reports = json.load(open(report_path))
except ValueError:
    sys.exit("third-party-checks: checkov wrote no report: " + open(report_path).read()[-2000:] +
             open(errors_path).read()[-2000:])
if isinstance(reports, dict):
    reports = [reports]
found = {}
for report in reports:
    for check in report.get("results", {}).get("failed_checks", []):
        source = check["file_path"].lstrip("/").rsplit(".", 1)[0] if check["file_path"].endswith(".yaml") \
            else check["file_path"].lstrip("/")
        found[(check["check_id"], check["resource"], source)] = check["check_name"]
expected = {}
for number, line in enumerate(open(baseline_path), 1):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    entry, _, reason = line.partition("#")
    fields = entry.split()
    if len(fields) != 3 or not reason.strip():
        sys.exit(f"{baseline_path}:{number}: want 'CHECK_ID RESOURCE SOURCE # reason', got: {line}")
    expected[tuple(fields)] = reason.strip()
status = 0
for key in sorted(found):
    if key not in expected:
        print(f"new checkov finding: {key[0]} {key[1]} in {key[2]}: {found[key]} "
              f"(fix it, or list it in {baseline_path} with the reason it is accepted)")
        status = 1
for key in sorted(expected):
    if key not in found:
        print(f"checkov baseline entry no longer found, remove it: {' '.join(key)}")
        status = 1
passed = sum(r.get("summary", {}).get("passed", 0) for r in reports)
print(f"checkov: {passed} passed, {len(found)} failed, all {len(expected)} accepted in the baseline"
      if status == 0 else f"checkov: {len(found)} failed checks, {len(expected)} accepted in the baseline")
sys.exit(status)
EOF
then
  failed=1
fi
exit "$failed"
