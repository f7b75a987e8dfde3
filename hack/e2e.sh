#!/usr/bin/env bash
# Runs the chainsaw e2e stories (test/e2e/) against the control plane of the test run,
# with my-operator running out of cluster under the ServiceAccount token of its RBAC
# (config/rbac), so the stories also prove that the RBAC is enough.
#   hack/e2e.sh STATE_DIR OPERATOR_BINARY
# STATE_DIR is the ctest fixture's state (its kubeconfig-path names the admin kubeconfig).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/lib/operator.sh"
state=${1:?usage: e2e.sh STATE_DIR OPERATOR_BINARY}
operator=${2:?usage: e2e.sh STATE_DIR OPERATOR_BINARY}
admin_kubeconfig=$(head -n1 "$state/kubeconfig-path")
work=$state/e2e
rm -rf "$work" && mkdir -p "$work"
kubectl=(kubectl --kubeconfig "$admin_kubeconfig")
namespace=my-operator-system

# Install the CRD, its admission policy, the RBAC and the feature flags as a user would.
"${kubectl[@]}" create namespace "$namespace" --dry-run=client -o yaml | "${kubectl[@]}" apply -f - >/dev/null
"${kubectl[@]}" apply --server-side --force-conflicts -f "$repo/config/crd/myorg.io_myresources.yaml" \
  -f "$repo/config/crd/myresources-annotations-policy.yaml" >/dev/null
"${kubectl[@]}" wait --for=condition=Established crd/myresources.myorg.io --timeout=60s >/dev/null
"${kubectl[@]}" apply -k "$repo/config/rbac" >/dev/null
"${kubectl[@]}" apply -f "$repo/config/manager/config_map.yaml" >/dev/null

write_service_account_kubeconfig "$admin_kubeconfig" "$namespace" my-operator "$work/operator.kubeconfig"
start_operator "$operator" "$work/operator.kubeconfig" "$namespace" "$work/operator.log"
trap 'stop_operator "$OPERATOR_PID"' EXIT

chainsaw=$("$repo/hack/build-tools.sh" --print-bin-dir chainsaw)/chainsaw
status=0
KUBECONFIG=$admin_kubeconfig "$chainsaw" test --no-color --config "$repo/test/e2e/.chainsaw.yaml" \
  --test-dir "$repo/test/e2e" --report-path "$work" --report-format JSON || status=$?
if [ $status -ne 0 ]; then
  echo "e2e: chainsaw failed ($status); the operator's last log lines:" >&2
  tail -n 60 "$work/operator.log" >&2
fi
if grep -qi 'forbidden' "$work/operator.log"; then
  echo "e2e: the operator was denied a request (see $work/operator.log): its RBAC is not enough" >&2
  status=1
fi
exit $status
