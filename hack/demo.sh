#!/usr/bin/env bash
# The README's run command (`make demo`): my-operator on a cluster, end to end.
#   - without KUBECONFIG: starts the local control plane (hack/testenv) in .cache/demo/;
#   - with KUBECONFIG: uses that cluster.
# Installs the CRD, RBAC and feature flags with the Helm chart (the in-cluster manager
# scaled to 0), runs the operator here under the chart's ServiceAccount token, applies
# the sample and waits until it is Ready.
#   hack/demo.sh [--fleet] [OPERATOR_BINARY]     start (idempotent: restarts the operator)
#   hack/demo.sh --down                          stop the operator and the local control planes
#   hack/demo.sh --self-test [--fleet] BINARY    start, then stop whatever happened (the test suite runs this)
# --fleet (`make demo-fleet`, docs/multicluster.md): the cluster above is the hub of a fleet; two more
# local control planes (member-1, member-2) get the CRD, the member RBAC (config/fleet/member-rbac.yaml)
# and a kubeconfig Secret each in the hub, and the one operator reconciles the sample in all three.
# MYOP_DEMO_DIR overrides the state folder (default .cache/demo).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/lib/operator.sh"
demo=${MYOP_DEMO_DIR:-$repo/.cache/demo}
namespace=my-operator-system
members=(member-1 member-2)
mkdir -p "$demo"

if [ "${1:-}" = "--self-test" ]; then
  trap '"$0" --down' EXIT
  shift
  [ $# -gt 0 ] || { echo "usage: demo.sh --self-test [--fleet] BINARY" >&2; exit 2; }
  "$0" "$@"
  exit $?
fi
if [ "${1:-}" = "--down" ]; then
  [ -f "$demo/operator.pid" ] && stop_operator "$(cat "$demo/operator.pid")" && rm -f "$demo/operator.pid"
  for member in "${members[@]}"; do
    [ -f "$demo/$member/instance.env" ] && "$repo/hack/testenv" down --dir "$demo/$member"
  done
  [ -f "$demo/controlplane/instance.env" ] && "$repo/hack/testenv" down --dir "$demo/controlplane"
  echo "demo: stopped"
  exit 0
fi
fleet=false
if [ "${1:-}" = "--fleet" ]; then
  fleet=true
  shift
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
  --set webhook.patchCaBundle=true --set fleet.kubeconfigSecrets.enabled="$fleet" --wait --timeout 2m >/dev/null
"${kubectl[@]}" wait --for=condition=Established crd/myresources.myorg.io --timeout=60s >/dev/null

[ -f "$demo/operator.pid" ] && stop_operator "$(cat "$demo/operator.pid")"
fleet_flag=""
[ "$fleet" = false ] || fleet_flag=--fleet-kubeconfig-secrets
write_service_account_kubeconfig "$admin_kubeconfig" "$namespace" my-operator "$demo/operator.kubeconfig"
echo "demo: starting my-operator (log: $demo/operator.log)"
start_operator "$binary" "$demo/operator.kubeconfig" "$namespace" "$demo/operator.log" \
  --webhook-bind-address "127.0.0.1:$webhook_port" --webhook-cert-names 127.0.0.1 \
  --webhook-secret my-operator-webhook-cert ${fleet_flag:+"$fleet_flag"}
echo "$OPERATOR_PID" > "$demo/operator.pid"

echo "demo: applying config/samples/myorg.io_v1beta1_myresource.yaml to namespace default"
"${kubectl[@]}" apply -n default -f "$repo/config/samples/myorg.io_v1beta1_myresource.yaml" >/dev/null
"${kubectl[@]}" wait -n default --for=condition=Ready myresource/web --timeout=180s >/dev/null
"${kubectl[@]}" get -n default myresources
"${kubectl[@]}" get -n default deployments -l app.kubernetes.io/managed-by=my-operator

if [ "$fleet" = true ]; then
  # The hub's CRD as the operator keeps it (its conversion webhook on this machine's loopback, its CA
  # in caBundle), for the members' API servers, which reach the same webhook.
  for _ in $(seq 1 100); do
    [ -n "$("${kubectl[@]}" get crd myresources.myorg.io -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')" ] && break
    sleep 0.2
  done
  "${kubectl[@]}" get crd myresources.myorg.io -o json | python3 -c '
import json, sys
crd = json.load(sys.stdin)
crd.pop("status", None)
crd["metadata"] = {"name": crd["metadata"]["name"], "labels": crd["metadata"].get("labels", {})}
json.dump(crd, sys.stdout)' > "$demo/member-crd.json"
  for member in "${members[@]}"; do
    if [ -f "$demo/$member/instance.env" ] && "$repo/hack/testenv" status --dir "$demo/$member" | grep -q "kube-apiserver running"; then
      echo "demo: reusing member $member in $demo/$member"
    else
      echo "demo: starting member $member (a local control plane of its own)"
      "$repo/hack/testenv" up --dir "$demo/$member" --nodes 1 >/dev/null
    fi
    member_kubectl=(kubectl --kubeconfig "$demo/$member/kubeconfig")
    "${member_kubectl[@]}" apply --server-side --force-conflicts -f "$demo/member-crd.json" >/dev/null
    "${member_kubectl[@]}" wait --for=condition=Established crd/myresources.myorg.io --timeout=60s >/dev/null
    "${member_kubectl[@]}" apply -f "$repo/config/fleet/member-rbac.yaml" >/dev/null
    member_kubeconfig=$("$repo/hack/testenv" kubeconfig-for my-operator-fleet --dir "$demo/$member")
    echo "demo: naming $member to the operator: Secret $namespace/$member, labelled sigs.k8s.io/multicluster-runtime-kubeconfig"
    "${kubectl[@]}" create secret generic "$member" -n "$namespace" --from-file=kubeconfig="$member_kubeconfig" \
      --dry-run=client -o yaml | "${kubectl[@]}" label --local -f - -o yaml \
      sigs.k8s.io/multicluster-runtime-kubeconfig=true | "${kubectl[@]}" apply -f - >/dev/null
    "${member_kubectl[@]}" apply -n default -f "$repo/config/samples/myorg.io_v1beta1_myresource.yaml" >/dev/null
  done
  for member in "${members[@]}"; do
    member_kubectl=(kubectl --kubeconfig "$demo/$member/kubeconfig")
    "${member_kubectl[@]}" wait -n default --for=condition=Ready myresource/web --timeout=180s >/dev/null
    echo "demo: $member:"
    "${member_kubectl[@]}" get -n default myresources
  done
  cat <<EOF

The sample is Ready in the hub and in both members, reconciled by one operator. Try:
  kubectl --kubeconfig $demo/member-1/kubeconfig patch mr web -n default --type merge -p '{"spec":{"replicas":3}}'
  kubectl --kubeconfig $admin_kubeconfig get events -n $namespace              # MemberEngaged, MemberReady
  kubectl --kubeconfig $admin_kubeconfig delete secret member-2 -n $namespace  # disengages member-2
  curl -s http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics | grep ^myoperator_fleet
  tail -f $demo/operator.log
Stop it all with: make demo-fleet-down
EOF
  exit 0
fi

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
