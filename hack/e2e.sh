#!/usr/bin/env bash
# Runs the chainsaw e2e stories (test/e2e/) against the control plane of the test run,
# with my-operator installed by its Helm chart and running out of cluster under the chart's
# ServiceAccount token, with the chart's own arguments. Then the API server's audit log proves
# that the steady state and a restart cost no writes, and that the chart's RBAC is least
# privilege (hack/lib/least_privilege.py): nothing denied, every grant used or allow-listed
# with its reason, no wildcard, no cluster-admin.
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
helm=("$("$repo/hack/build-tools.sh" --print-bin-dir helm)/helm" --kubeconfig "$admin_kubeconfig")
namespace=my-operator-system
release=my-operator

# The CRD and its admission policy with kubectl (other tests of the run install the same CRD
# with kubectl, and Helm refuses to adopt what it did not create); everything else with the
# chart, as a user would. replicaCount=0: the operator runs here, not in a kwok pod.
# The CRD is config/crd's with the fixture's conversion webhook (hack/test-fixture.sh).
# webhook.patchCaBundle=true: the RBAC of a default install (which owns the CRD's caBundle) is the
# one checked below; the operator itself runs with --webhook-crds= (the caBundle is the fixture's).
"${kubectl[@]}" apply --server-side --force-conflicts -f "$state/webhook/myorg.io_myresources.yaml" \
  -f "$repo/config/crd/myresources-annotations-policy.yaml" >/dev/null
"${kubectl[@]}" wait --for=condition=Established crd/myresources.myorg.io --timeout=60s >/dev/null
"${helm[@]}" uninstall "$release" -n "$namespace" --wait >/dev/null 2>&1 || true
"${helm[@]}" install "$release" "$repo/charts/my-operator" -n "$namespace" --create-namespace \
  --set crds.install=false --set webhook.patchCaBundle=true --set replicaCount=0 \
  --set podDisruptionBudget.enabled=false >/dev/null
# The chart's ServiceAccount policy bounds every write the operator makes below (a refusal is a
# "forbidden" in its log, which fails the run): it must be there.
"${kubectl[@]}" get validatingadmissionpolicybinding "$release-service-account-deployments" \
  "$release-service-account-crds" >/dev/null
# Whatever happens next, the run ends with the operator stopped and the release uninstalled: the
# chart's Deployment left in my-operator-system would make later tests of this control plane apply
# config/default's over it (its selector is immutable).
OPERATOR_PID=
cleanup() {
  [ -z "$OPERATOR_PID" ] || stop_operator "$OPERATOR_PID"
  "${helm[@]}" uninstall "$release" -n "$namespace" --wait --timeout 120s >/dev/null 2>&1 ||
    echo "e2e: helm uninstall $release failed; later tests may find its objects" >&2
}
trap cleanup EXIT

# The chart's own arguments for the operator container, less what start_operator sets itself
# (bind addresses on loopback ports, text logs, leader election in the release namespace); the
# conversion webhook on a loopback port of the kernel's choice.
mapfile -t chart_args < <("${kubectl[@]}" get deployment "$release" -n "$namespace" \
  -o jsonpath='{.spec.template.spec.containers[0].args}' | python3 -c '
import json, sys
for arg in json.load(sys.stdin):
    if arg.startswith("--webhook-bind-address"):
        print("--webhook-bind-address=127.0.0.1:0")  # the chart serves the webhook: here on loopback
        # The CRD names the webhook of the fixture, whose CA its caBundle holds: keep it.
        print("--webhook-crds=")
    elif not arg.startswith(("--metrics-bind-address", "--health-probe-bind-address", "--log-format",
                             "--webhook-crds")) \
            and arg != "--leader-elect":
        print(arg)')
echo "e2e: the chart's arguments: ${chart_args[*]}"

write_service_account_kubeconfig "$admin_kubeconfig" "$namespace" "$release" "$work/operator.kubeconfig"
start_operator "$operator" "$work/operator.kubeconfig" "$namespace" "$work/operator.log" "${chart_args[@]}"

chainsaw=$("$repo/hack/build-tools.sh" --print-bin-dir chainsaw)/chainsaw
status=0
KUBECONFIG=$admin_kubeconfig "$chainsaw" test --no-color --config "$repo/test/e2e/.chainsaw.yaml" \
  --test-dir "$repo/test/e2e" --report-path "$work" --report-format JSON || status=$?
if [ $status -ne 0 ]; then
  echo "e2e: chainsaw failed ($status); the operator's last log lines:" >&2
  tail -n 60 "$work/operator.log" >&2
fi
# With the chart's --metrics-secure (its default), scrape /metrics as Prometheus does: HTTPS with
# the token of a ServiceAccount bound to the chart's metrics-reader ClusterRole (the operator
# asks the API server with a TokenReview and a SubjectAccessReview, grants the audit below
# checks are used); without a token the answer is 401.
if printf '%s\n' "${chart_args[@]}" | grep -qx -- '--metrics-secure'; then
  reader_binding=e2e-prometheus-metrics-reader
  "${kubectl[@]}" delete clusterrolebinding "$reader_binding" --ignore-not-found >/dev/null
  "${kubectl[@]}" create serviceaccount e2e-prometheus -n "$namespace" >/dev/null 2>&1 || true
  "${kubectl[@]}" create clusterrolebinding "$reader_binding" --clusterrole "$release-metrics-reader" \
    --serviceaccount "$namespace:e2e-prometheus" >/dev/null
  scraper_token=$("${kubectl[@]}" create token e2e-prometheus -n "$namespace" --duration=10m)
  metrics_url=https://127.0.0.1:$OPERATOR_METRICS_PORT/metrics
  # -k: without metrics.certSecret the operator's certificate is self-signed.
  scraped=$(curl -sk -o "$work/metrics.txt" -w '%{http_code}' -H "Authorization: Bearer $scraper_token" "$metrics_url" || true)
  anonymous=$(curl -sk -o /dev/null -w '%{http_code}' "$metrics_url" || true)
  "${kubectl[@]}" delete clusterrolebinding "$reader_binding" --ignore-not-found >/dev/null
  if [ "$scraped" != 200 ] || ! grep -q '^controller_runtime_reconcile_total' "$work/metrics.txt" || [ "$anonymous" != 401 ]; then
    echo "e2e: secure metrics: a metrics-reader token got HTTP $scraped (want 200 with metrics), no token HTTP $anonymous (want 401)" >&2
    status=1
  else
    echo "e2e: secure metrics: a metrics-reader token scrapes over HTTPS (200), no token is refused (401)"
  fi
fi
# RBAC denials only: a 403 because a namespace is being terminated (other tests' namespaces go
# while the operator, watching all namespaces, still reconciles there) is admission, not RBAC.
if grep -i 'forbidden' "$work/operator.log" | grep -qv 'because it is being terminated'; then
  echo "e2e: the operator was denied a request (see $work/operator.log): its RBAC is not enough" >&2
  status=1
fi

# Steady state and restart cost no writes, and nothing the operator asked for was denied: counted
# by the API server's audit log (the control plane of the test run writes one).
audit_log=$(dirname "$admin_kubeconfig")/audit.log
operator_user=system:serviceaccount:$namespace:$release
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
start_operator "$operator" "$work/operator.kubeconfig" "$namespace" "$work/operator-restarted.log" "${chart_args[@]}"
sleep 15
if ! "${audit[@]}" writes "$audit_log" "$operator_user" "$offset" > "$work/steady-writes.txt"; then
  echo "e2e: the operator wrote in a steady cluster (15 s idle, a restart, 15 s idle):" >&2
  cat "$work/steady-writes.txt" >&2
  status=1
else
  echo "e2e: steady state and restart: 0 writes by $operator_user (audit log)"
fi
# Least privilege over everything the operator did in this run (the stories, the steady state,
# the restart): nothing denied, no wildcard, no cluster-admin, every grant used or allow-listed.
"${kubectl[@]}" get clusterroles,clusterrolebindings,roles,rolebindings -A -o json > "$work/rbac.json"
if ! "$repo/hack/lib/least_privilege.py" "$audit_log" "$namespace:$release" "$work/rbac.json" \
    "$repo/hack/lib/rbac-allowlist.txt" > "$work/least-privilege.txt"; then
  echo "e2e: the chart's RBAC is not least privilege for what the operator did:" >&2
  cat "$work/least-privilege.txt" >&2
  status=1
else
  cat "$work/least-privilege.txt"
fi
# The finalizer needs the running operator: delete the object before the namespace.
"${kubectl[@]}" delete -n "$steady_namespace" myresource/steady --timeout=60s >/dev/null || status=1
"${kubectl[@]}" delete namespace "$steady_namespace" --wait=false >/dev/null
exit $status
