# Shared by hack/e2e.sh and hack/demo.sh (sourced): run my-operator out of cluster under
# the token of its ServiceAccount, exactly as a pod of the chart would be authorized.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# write_service_account_kubeconfig ADMIN_KUBECONFIG NAMESPACE SERVICE_ACCOUNT OUTPUT
# A kubeconfig holding only a TokenRequest token of the ServiceAccount.
write_service_account_kubeconfig() {
  local admin=$1 namespace=$2 account=$3 output=$4
  local kubectl=(kubectl --kubeconfig "$admin") token server ca_data
  token=$("${kubectl[@]}" create token "$account" -n "$namespace" --duration=6h)
  server=$("${kubectl[@]}" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca_data=$("${kubectl[@]}" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  (umask 077 && cat > "$output" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: cluster, cluster: {server: "$server", certificate-authority-data: "$ca_data"}}]
users: [{name: $account, user: {token: "$token"}}]
contexts: [{name: $account, context: {cluster: cluster, user: $account, namespace: $namespace}}]
current-context: $account
KUBECONFIG
  )
}

# start_operator BINARY KUBECONFIG NAMESPACE LOG_FILE [EXTRA_FLAGS...]
# Starts the operator in the background; sets OPERATOR_PID, OPERATOR_PROBE_PORT and
# OPERATOR_METRICS_PORT, and waits until /readyz answers (exits 1 with the log if not).
start_operator() {
  local binary=$1 kubeconfig=$2 namespace=$3 log_file=$4
  shift 4
  OPERATOR_METRICS_PORT=$(free_port)
  OPERATOR_PROBE_PORT=$(free_port)
  POD_NAMESPACE=$namespace setsid "$binary" --kubeconfig "$kubeconfig" \
    --metrics-bind-address "127.0.0.1:$OPERATOR_METRICS_PORT" \
    --health-probe-bind-address "127.0.0.1:$OPERATOR_PROBE_PORT" \
    --leader-elect --leader-election-namespace "$namespace" --log-format text "$@" \
    > "$log_file" 2>&1 < /dev/null &
  OPERATOR_PID=$!
  local attempt
  for attempt in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$OPERATOR_PROBE_PORT/readyz" >/dev/null && return 0
    if ! kill -0 "$OPERATOR_PID" 2>/dev/null; then
      echo "my-operator exited during start-up; its log ($log_file):" >&2
      tail -n 40 "$log_file" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "my-operator not ready after 60 s; its log ($log_file):" >&2
  tail -n 40 "$log_file" >&2
  return 1
}

# stop_operator PID: SIGTERM (the operator releases its lease), SIGKILL after 30 s.
stop_operator() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "my-operator (pid $pid) still running 30 s after SIGTERM; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
}
