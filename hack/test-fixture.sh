#!/usr/bin/env bash
# CTest fixture for the integration tests: one control plane per test run.
#   test-fixture.sh up STATE_DIR [TESTENV_ARGS...]
#                                   starts hack/testenv in STATE_DIR/controlplane (with TESTENV_ARGS,
#                                   e.g. --no-sharded-watch), or, when $KUBECONFIG is set, records
#                                   that cluster instead.
#   test-fixture.sh down STATE_DIR  stops the control plane it started, if any.
# The tests read STATE_DIR/kubeconfig-path (see test/integration/support/testenv.cpp).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
action=${1:?usage: test-fixture.sh up|down STATE_DIR}
state=${2:?usage: test-fixture.sh up|down STATE_DIR}
shift 2
mkdir -p "$state"
case "$action" in
  up)
    rm -f "$state/kubeconfig-path" "$state/controlplane-dir"
    if [ -n "${KUBECONFIG:-}" ]; then
      echo "test-fixture: using the existing cluster of KUBECONFIG=$KUBECONFIG (both lanes of integration tests share it: run ctest -j 1)"
      echo "$KUBECONFIG" > "$state/kubeconfig-path"
      kubectl --kubeconfig "${KUBECONFIG%%:*}" get --raw /readyz >/dev/null ||
        { echo "test-fixture: the cluster of KUBECONFIG is not ready" >&2; exit 1; }
    else
      "$repo/hack/testenv" up --dir "$state/controlplane" --audit "$@"
      echo "$state/controlplane" > "$state/controlplane-dir"
      echo "$state/controlplane/kubeconfig" > "$state/kubeconfig-path"
    fi ;;
  down)
    if [ -f "$state/controlplane-dir" ]; then
      "$repo/hack/testenv" down --dir "$(cat "$state/controlplane-dir")"
    fi ;;
  *) echo "test-fixture: unknown action '$action'" >&2; exit 2 ;;
esac
