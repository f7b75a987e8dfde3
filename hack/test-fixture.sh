#!/usr/bin/env bash
# CTest fixture for the integration tests: one control plane per test run.
#   test-fixture.sh up STATE_DIR [TESTENV_ARGS...]
#                                   starts hack/testenv in STATE_DIR/controlplane (with TESTENV_ARGS,
#                                   e.g. --no-sharded-watch), or, when $KUBECONFIG is set, records
#                                   that cluster instead; then the conversion webhook and the CRD.
#   test-fixture.sh down STATE_DIR  stops the webhook and the control plane it started, if any.
# The tests read STATE_DIR/kubeconfig-path (see test/integration/support/testenv.cpp).
#
# The conversion webhook of the run: v1beta1 is the MyResource storage version, so every v1alpha1
# read and write goes through a webhook, whether an operator runs or not. `my-operator --webhook-only`
# ($MYOP_OPERATOR_BINARY, default build/my-operator) serves it on a loopback port with a certificate
# of this fixture's CA, and STATE_DIR/webhook/myorg.io_myresources.yaml is the shipped CRD with
# clientConfig {url, caBundle} pointing at it: the CRD every test applies (testenv::crd_manifest).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/lib/operator.sh"
action=${1:?usage: test-fixture.sh up|down STATE_DIR}
state=${2:?usage: test-fixture.sh up|down STATE_DIR}
shift 2
mkdir -p "$state"
webhook=$state/webhook

stop_webhook() {
  if [ -f "$webhook/pid" ]; then
    stop_operator "$(cat "$webhook/pid")"
    rm -f "$webhook/pid"
  fi
}

start_webhook() {
  local kubeconfig=$1 binary=${MYOP_OPERATOR_BINARY:-$repo/build/my-operator}
  [ -x "$binary" ] || { echo "test-fixture: no operator binary at $binary (build it first)" >&2; exit 1; }
  stop_webhook
  rm -rf "$webhook" && mkdir -p "$webhook"
  # A CA of the fixture and a serving certificate for 127.0.0.1, valid for the run.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj /CN=my-operator-test-webhook-ca -keyout "$webhook/ca.key" -out "$webhook/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout "$webhook/tls.key" -out "$webhook/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
    > "$webhook/tls.ext"
  openssl x509 -req -in "$webhook/tls.csr" -CA "$webhook/ca.crt" -CAkey "$webhook/ca.key" \
    -CAcreateserial -days 30 -extfile "$webhook/tls.ext" -out "$webhook/tls.crt" 2>/dev/null
  local port probe_port
  port=$(free_port)
  probe_port=$(free_port)
  setsid "$binary" --webhook-only --kubeconfig "$kubeconfig" --webhook-bind-address "127.0.0.1:$port" \
    --webhook-cert-dir "$webhook" --metrics-bind-address 0 \
    --health-probe-bind-address "127.0.0.1:$probe_port" --log-format text >"$webhook/webhook.log" 2>&1 </dev/null &
  echo $! > "$webhook/pid"
  local url=https://127.0.0.1:$port/convert
  for _ in $(seq 1 100); do
    # Any HTTP answer (an empty body is a 400) means it serves TLS with the fixture's certificate.
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$webhook/ca.crt" -X POST "$url" || true)
    [ "$code" != 000 ] && break
    kill -0 "$(cat "$webhook/pid")" 2>/dev/null ||
      { echo "test-fixture: the webhook exited:" >&2; tail -n 20 "$webhook/webhook.log" >&2; exit 1; }
    sleep 0.1
  done
  [ "$code" != 000 ] || { echo "test-fixture: the webhook does not answer at $url" >&2; exit 1; }
  echo "$url" > "$webhook/url"
  python3 - "$repo/config/crd/myorg.io_myresources.yaml" "$url" "$webhook/ca.crt" \
    > "$webhook/myorg.io_myresources.yaml" <<'PY'
import base64, sys
source, url, ca = sys.argv[1:4]
lines = open(source).read().split("\n")
at = lines.index("      clientConfig:")
end = at + 1
while end < len(lines) and lines[end].startswith("        "):
    end += 1
bundle = base64.b64encode(open(ca, "rb").read()).decode()
lines[at + 1:end] = ["        url: " + url, "        caBundle: " + bundle]
print("\n".join(lines), end="")
PY
  kubectl --kubeconfig "$kubeconfig" apply --server-side --force-conflicts \
    -f "$webhook/myorg.io_myresources.yaml" -f "$repo/config/crd/myresources-annotations-policy.yaml" >/dev/null
  kubectl --kubeconfig "$kubeconfig" wait --for=condition=Established crd/myresources.myorg.io \
    --timeout=60s >/dev/null
  echo "test-fixture: conversion webhook at $url (pid $(cat "$webhook/pid")), CRD installed"
}

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
