#!/usr/bin/env bash
# The README's run command (`make demo`): my-operator on a cluster, end to end.
#   - without KUBECONFIG: starts the local control plane (hack/testenv) in .cache/demo/;
#   - with KUBECONFIG: uses that cluster.
# Installs the CRD, RBAC and feature flags with the Helm chart (the in-cluster manager
# scaled to 0), runs the operator here under the chart's ServiceAccount token, applies
# the sample and waits until it is Ready.
#   hack/demo.sh [OPERATOR_BINARY]     start (idempotent: restarts the operator)
#   hack/demo.sh --down                stop the operator and the local control plane
#   hack/demo.sh --self-test BINARY    start, then stop whatever happened (the test suite runs this)
# MYOP_DEMO_DIR overrides the state folder (default .cache/demo).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/lib/operator.sh"
demo=${MYOP_DEMO_DIR:-$repo/.cache/demo}
namespace=my-operator-system
mkdir -p "$demo"

if [ "${1:-}" = "--self-test" ]; then
  trap '"$0" --down' EXIT
  "$0" "${2:?usage: demo.sh --self-test BINARY}"
  exit $?
fi
if [ "${1:-}" = "--down" ]; then
  [ -f "$demo/operator.pid" ] && stop_operator "$(cat "$demo/operator.pid")" && rm -f "$demo/operator.pid"
  [ -f "$demo/controlplane/instance.env" ] && "$repo/hack/testenv" down --dir "$demo/controlplane"
  echo "demo: stopped"
  exit 0
fi
binary=${1:-$repo/build/my-operator}
[ -x "$binary" ] || { echo "demo: $binary is missing; run 'make build' first" >&2; exit 1; }

if [ -n "${KUBECONFIG:-}" ]; then
  admin_kubeconfig=${KUBECONFIG%%:*}
  echo "demo: using the cluster of KUBECONFIG=$admin_kubeconfig"
else
  if [ -f "$demo/controlplane/instance.env" ] && "$repo/hack/testenv" status --dir "$demo/controlplane" | grep -q "kube-apiserver running"; then
    echo "demo: reusing the local control plane in $demo/controlplane"
  else
    "$repo/hack/testenv" up --dir "$demo/controlplane" >/dev/null
  fi
  admin_kubeconfig=$demo/controlplane/kubeconfig
fi
kubectl=(kubectl --kubeconfig "$admin_kubeconfig")

# The operator runs here, so the CRD's conversion webhook is its loopback port (webhook.url); it
# makes its CA and puts it into the CRD's caBundle itself, as it does in a cluster. One process serves
# both the controller and the webhook (webhook.deployment.enabled=false: the manager's ServiceAccount
# holds the webhook's rights), and the URL is its own (webhook.patchCaBundle=true).
webhook_port=$(free_port)
helm=$("$repo/hack/build-tools.sh" --print-bin-dir helm)/helm
echo "demo: installing the chart (CRD, RBAC, feature flags) into $namespace"
"$helm" --kubeconfig "$admin_kubeconfig" upgrade --install my-operator "$repo/charts/my-operator" \
  --namespace "$namespace" --create-namespace --set replicaCount=0 --set podDisruptionBudget.enabled=false \
  --set webhook.url="https://127.0.0.1:$webhook_port/convert" --set webhook.deployment.enabled=false \
  --set webhook.patchCaBundle=true --wait --timeout 2m >/dev/null
"${kubectl[@]}" wait --for=condition=Established crd/myresources.myorg.io --timeout=60s >/dev/null

[ -f "$demo/operator.pid" ] && stop_operator "$(cat "$demo/operator.pid")"
write_service_account_kubeconfig "$admin_kubeconfig" "$namespace" my-operator "$demo/operator.kubeconfig"
echo "demo: starting my-operator (log: $demo/operator.log)"
start_operator "$binary" "$demo/operator.kubeconfig" "$namespace" "$demo/operator.log" \
  --webhook-bind-address "127.0.0.1:$webhook_port" --webhook-cert-names 127.0.0.1 \
  --webhook-secret my-operator-webhook-cert
echo "$OPERATOR_PID" > "$demo/operator.pid"

echo "demo: applying config/samples/myorg.io_v1beta1_myresource.yaml to namespace default"
"${kubectl[@]}" apply -n default -f "$repo/config/samples/myorg.io_v1beta1_myresource.yaml" >/dev/null
"${kubectl[@]}" wait -n default --for=condition=Ready myresource/web --timeout=180s >/dev/null
"${kubectl[@]}" get -n default myresources
"${kubectl[@]}" get -n default deployments -l app.kubernetes.io/managed-by=my-operator

cat <<EOF

The sample is Ready. Try:
  export KUBECONFIG=$admin_kubeconfig
  kubectl get mr -A -w                                    # watch MyResources
  kubectl patch mr web -n default --type merge -p '{"spec":{"replicas":3}}'
  kubectl apply -n default -f $repo/config/samples/myorg.io_v1beta1_myresource_canary.yaml
  curl -s http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics | grep ^controller_runtime
  tail -f $demo/operator.log
Stop it all with: make demo-down
EOF
