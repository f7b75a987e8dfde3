#!/usr/bin/env python3
"""trace_overhead: reconcile latency with tracing off, and with --otlp-endpoint at a collector that is down.

    bench/trace_overhead.py [--kubeconfig KUBECONFIG] [--n 200] [--rounds 1] [--build-dir build] [--check]

On a running control plane (e.g. `hack/test-fixture.sh up DIR`, then DIR/controlplane/kubeconfig;
without --kubeconfig, the one of the fixture $MYOP_TESTENV_STATE names), for each mode, one after another, on a fresh namespace: start build/my-operator, create N
MyResources at once, wait until every one is Ready, then read the operator's own histograms from
/metrics: controller_runtime_reconcile_time_seconds (the reconcile itself) and
myoperator_event_to_reconcile_seconds (watch event seen -> reconciled, queue wait included), plus
myoperator_trace_spans_dropped_total and the process's CPU time per reconcile (/proc, less sensitive
to other load on the machine than the latencies). Modes:

  off        no --otlp-endpoint (tracing off)
  refused    --otlp-endpoint at a closed port: every export is refused at once
  blackhole  --otlp-endpoint at a socket that accepts connections and never answers: every export
             waits for its 5 s timeout

Quantiles are interpolated within the histogram's buckets, as PromQL's histogram_quantile.
bench/README.md has results. --check (the smoke run of `make test`) fails, naming the figure, unless
every mode has every object Ready and reconciled, no span is dropped with tracing off, and spans
are dropped, and counted, with the collector down (it waits for the counter instead of 7 s).
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kubectl(kubeconfig, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, text=True,
                          capture_output=True)


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def histogram(text, name):
    buckets, total, count = [], 0.0, 0.0
    for line in text.splitlines():
        if line.startswith(name + "_bucket"):
            le = re.search(r'le="([^"]+)"', line).group(1)
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
        elif line.startswith(name + "_sum"):
            total += float(line.split()[-1])
        elif line.startswith(name + "_count"):
            count += float(line.split()[-1])
    merged = {}
    for le, value in buckets:
        merged[le] = merged.get(le, 0.0) + value
    return sorted(merged.items()), total, count


def quantile(buckets, q):
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for le, cumulative in buckets:
        if cumulative >= rank:
            if le == float("inf"):
                return lower_bound
            return lower_bound + (le - lower_bound) * (rank - lower_count) / max(cumulative - lower_count, 1e-12)
        lower_bound, lower_count = le, cumulative
    return buckets[-1][0]


def sample(text, prefix):
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


def manifest(namespace, n):
    return "".join(
        f"---\napiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: web-{i}\n  namespace: {namespace}\n"
        f"spec:\n  image: nginx:1.27.{i % 5}\n  replicas: 1\n" for i in range(n))


def ready_count(kubeconfig, namespace):
    result = kubectl(kubeconfig, "get", "myresources", "-n", namespace, "-o",
                     "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{'\\n'}{end}")
    return result.stdout.split().count("True")


def run_mode(args, mode, round_number):
    namespace = f"trace-bench-{mode}-{round_number}-{os.getpid()}"
    kubectl(args.kubeconfig, "create", "namespace", namespace)
    blackhole = None
    flags = []
    if mode == "refused":
        flags = ["--otlp-endpoint", f"http://127.0.0.1:{free_port()}"]
    elif mode == "blackhole":
        blackhole = socket.socket()
        blackhole.bind(("127.0.0.1", 0))
        blackhole.listen(4096)  # the kernel accepts; nobody reads or answers
        flags = ["--otlp-endpoint", f"http://127.0.0.1:{blackhole.getsockname()[1]}"]
    metrics_port, health_port = free_port(), free_port()
    command = [os.path.join(args.build_dir, "my-operator"), "--kubeconfig", args.kubeconfig, "--namespaces",
               namespace, "--metrics-bind-address", f"127.0.0.1:{metrics_port}", "--health-probe-bind-address",
               f"127.0.0.1:{health_port}", "--log-level", "warn", *flags]
    log = open(os.path.join(args.out_dir, f"operator-{mode}-{round_number}.log"), "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "POD_NAMESPACE": namespace})
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=2)
                break
            except Exception:
                time.sleep(0.2)
        started = time.time()
        applied = kubectl(args.kubeconfig, "apply", "-f", "-", stdin=manifest(namespace, args.n))
        if applied.returncode != 0:
            sys.exit(f"trace_overhead: kubectl apply failed: {applied.stderr}")
        while ready_count(args.kubeconfig, namespace) < args.n:
            if time.time() - started > args.timeout:
                sys.exit(f"trace_overhead: {mode}: not all {args.n} Ready after {args.timeout} s")
            time.sleep(1)
        wall = time.time() - started
        if args.check and mode != "off":
            # The first batch (after 5 s) fails at once (refused) or after its 5 s timeout (blackhole).
            deadline = time.time() + 30
            while sample(scrape(metrics_port), "myoperator_trace_spans_dropped_total") == 0 and time.time() < deadline:
                time.sleep(0.5)
        elif not args.check:
            time.sleep(7)  # one batch interval (5 s) and its retry: the drop counter has moved
        text = scrape(metrics_port)
        with open(f"/proc/{process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        cpu_seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        if blackhole:
            blackhole.close()
        kubectl(args.kubeconfig, "get", "myresources", "-n", namespace, "-o", "name")
        subprocess.run(f"kubectl --kubeconfig {args.kubeconfig} get myresources -n {namespace} -o name | "
                       f"xargs -r kubectl --kubeconfig {args.kubeconfig} patch -n {namespace} --type merge "
                       "-p '{\"metadata\":{\"finalizers\":null}}' >/dev/null", shell=True)
        # Gone before the next mode starts (or, on a shared control plane, before the next test).
        kubectl(args.kubeconfig, "delete", "namespace", namespace, "--timeout=120s")
    reconcile, reconcile_sum, reconcile_count = histogram(text, "controller_runtime_reconcile_time_seconds")
    event, _, event_count = histogram(text, "myoperator_event_to_reconcile_seconds")
    return {
        "mode": mode, "round": round_number, "wall_s": wall, "reconciles": reconcile_count,
        "reconcile_mean_ms": 1000 * reconcile_sum / max(reconcile_count, 1),
        "reconcile_p50_ms": 1000 * quantile(reconcile, 0.5), "reconcile_p99_ms": 1000 * quantile(reconcile, 0.99),
        "event_p50_ms": 1000 * quantile(event, 0.5), "event_p99_ms": 1000 * quantile(event, 0.99),
        "events": event_count,
        "dropped": sample(text, "myoperator_trace_spans_dropped_total"),
        "cpu_ms_per_reconcile": 1000 * cpu_seconds / max(reconcile_count, 1),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", help="default: the kubeconfig-path of $MYOP_TESTENV_STATE (hack/test-fixture.sh)")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--modes", default="off,refused,blackhole")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--out-dir", default="/tmp/trace-overhead")
    parser.add_argument("--check", action="store_true", help="fail unless the figures above hold (see the top)")
    args = parser.parse_args()
    if not args.kubeconfig:
        state = os.environ.get("MYOP_TESTENV_STATE")
        if not state:
            parser.error("--kubeconfig, or MYOP_TESTENV_STATE (a hack/test-fixture.sh state directory)")
        with open(os.path.join(state, "kubeconfig-path")) as f:
            args.kubeconfig = f.readline().strip().split(":")[0]
    os.makedirs(args.out_dir, exist_ok=True)
    failed = []
    print("| mode | round | N | wall s | reconciles | reconcile mean ms | p50 ms | p99 ms | event->reconciled p50 ms "
          "| p99 ms | CPU ms/reconcile | spans dropped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for round_number in range(1, args.rounds + 1):
        for mode in args.modes.split(","):
            r = run_mode(args, mode, round_number)
            print(f"| {r['mode']} | {r['round']} | {args.n} | {r['wall_s']:.1f} | {r['reconciles']:.0f} | "
                  f"{r['reconcile_mean_ms']:.1f} | {r['reconcile_p50_ms']:.1f} | {r['reconcile_p99_ms']:.1f} | "
                  f"{r['event_p50_ms']:.0f} | {r['event_p99_ms']:.0f} | {r['cpu_ms_per_reconcile']:.2f} | "
                  f"{r['dropped']:.0f} |", flush=True)
            if args.check:
                failed += check(r, args.n)
    for what in failed:
        print(f"trace_overhead: check FAILED: {what}", file=sys.stderr)
    return 1 if failed else 0


def check(result, n):
    """The figures --check asks for, of one mode's run: what failed."""
    label = f"{result['mode']} (round {result['round']})"
    failed = []
    if result["reconciles"] < n:
        failed.append(f"{label}: reconciles = {result['reconciles']:.0f} (expected >= {n}, one per object at least)")
    if result["mode"] == "off" and result["dropped"] != 0:
        failed.append(f"{label}: spans dropped = {result['dropped']:.0f} with tracing off (expected 0)")
    if result["mode"] != "off" and result["dropped"] == 0:
        failed.append(f"{label}: spans dropped = 0 with the collector down (expected > 0: every export fails)")
    return failed


if __name__ == "__main__":
    sys.exit(main())
