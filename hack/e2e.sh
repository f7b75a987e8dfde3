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

# Steady state and restart cost no writes, and nothing the operator asked for was denied: counted
# by the API server's audit log (the control plane of the test run writes one).
audit_log=$(dirname "$admin_kubeconfig")/audit.log
operator_user=system:serviceaccount:$namespace:my-operator
audit=("$repo/hack/lib/audit.py")
if [ ! -f "$audit_log" ]; then
  echo "e2e: NOT CHECKED: zero writes and no 403 (the cluster of KUBECONFIG has no audit log here)" >&2
  exit $status
fi
steady_namespace=e2e-steady-$$
"${kubectl[@]}" create namespace "$steady_namespace" >/dev/null
cat <<MANIFEST | "${kubectl[@]}" apply -n "$steady_namespace" -f - >/dev/null
apiVersion: myorg.io/v1alpha1
kind: MyResource
metadata: {name: steady}
spec: {image: "registry.example/team/steady:1.0.0", replicas: 2}
MANIFEST
"${kubectl[@]}" wait -n "$steady_namespace" --for=condition=Ready myresource/steady --timeout=120s >/dev/null
sleep 5  # the last status and event writes of the rollout settle
offset=$("${audit[@]}" lines "$audit_log")
sleep 15
stop_operator "$OPERATOR_PID"
start_operator "$operator" "$work/operator.kubeconfig" "$namespace" "$work/operator-restarted.log"
sleep 15
if ! "${audit[@]}" writes "$audit_log" "$operator_user" "$offset" > "$work/steady-writes.txt"; then
  echo "e2e: the operator wrote in a steady cluster (15 s idle, a restart, 15 s idle):" >&2
  cat "$work/steady-writes.txt" >&2
  status=1
else
  echo "e2e: steady state and restart: 0 writes by $operator_user (audit log)"
fi
if ! "${audit[@]}" denied "$audit_log" "$operator_user" > "$work/denied.txt"; then
  echo "e2e: requests of $operator_user were denied (403):" >&2
  cat "$work/denied.txt" >&2
  status=1
else
  echo "e2e: no request of $operator_user was denied (audit log)"
fi
# The finalizer needs the running operator: delete the object before the namespace.
"${kubectl[@]}" delete -n "$steady_namespace" myresource/steady --timeout=60s >/dev/null || status=1
"${kubectl[@]}" delete namespace "$steady_namespace" --wait=false >/dev/null
exit $status
