#!/usr/bin/env bash
# CTest fixture for the integration tests: one control plane per test run.
#   test-fixture.sh up STATE_DIR [TESTENV_ARGS...]
#                                   starts hack/testenv in STATE_DIR/controlplane (with TESTENV_ARGS,
#                                   e.g. --no-sharded-watch), or, when $KUBECONFIG is set, records
#                                   that cluster instead; then the conversion webhook and the CRD.
#   test-fixture.sh down STATE_DIR  stops the webhook and the control plane it started, if any.
# The tests read STATE_DIR/kubeconfig-path (see test/integration/support/testenv.cpp).
#
# The conversion webhook of the run (hack/lib/conversion-webhook): v1beta1 is the MyResource storage
# version, so every v1alpha1 read and write goes through a webhook, whether an operator runs or not.
# `my-operator --webhook-only` ($MYOP_OPERATOR_BINARY, default build/my-operator) serves it on a
# loopback port with a certificate of its own CA (STATE_DIR/webhook/ca.crt, url), and
# STATE_DIR/webhook/myorg.io_myresources.yaml is the shipped CRD with clientConfig {url, caBundle}
# pointing at it: the CRD every test applies (testenv::crd_manifest).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
action=${1:?usage: test-fixture.sh up|down STATE_DIR}
state=${2:?usage: test-fixture.sh up|down STATE_DIR}
shift 2
mkdir -p "$state"
webhook=$state/webhook

# hack/lib/conversion-webhook (shared with bench/run): the CA, the `--webhook-only` process, the CRD.
start_webhook() { "$repo/hack/lib/conversion-webhook" start "$webhook" "$1"; }
stop_webhook() { "$repo/hack/lib/conversion-webhook" stop "$webhook"; }

case "$action" in
  up)
    rm -f "$state/kubeconfig-path" "$state/controlplane-dir"
    if [ -n "${KUBECONFIG:-}" ]; then
      echo "test-fixture: using the existing cluster of KUBECONFIG=$KUBECONFIG (both lanes of integration tests share it: run ctest -j 1)"
      echo "$KUBECONFIG" > "$state/kubeconfig-path"
      kubectl --kubeconfig "${KUBECONFIG%%:*}" get --raw /readyz >/dev/null ||
        { echo "test-fixture: the cluster of KUBECONFIG is not ready" >&2; exit 1; }
      start_webhook "${KUBECONFIG%%:*}"
    else
      "$repo/hack/testenv" up --dir "$state/controlplane" --audit "$@"
      echo "$state/controlplane" > "$state/controlplane-dir"
      echo "$state/controlplane/kubeconfig" > "$state/kubeconfig-path"
      start_webhook "$state/controlplane/kubeconfig"
    fi ;;
  down)
    stop_webhook
    if [ -f "$state/controlplane-dir" ]; then
      "$repo/hack/testenv" down --dir "$(cat "$state/controlplane-dir")"
    fi ;;
  *) echo "test-fixture: unknown action '$action'" >&2; exit 2 ;;
esac
