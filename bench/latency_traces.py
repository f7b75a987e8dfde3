#!/usr/bin/env python3
"""latency_traces: where the latency scenario's time goes, from the operator's own traces.

    bench/latency_traces.py [--n 1000] [--binary build/my-operator] [--results RESULTS.json]
                            [-- bench/run options]

Starts Jaeger (hack/build-tools.sh's, OTLP/HTTP in, traces kept in memory) on free 127.0.0.1 ports,
runs `bench/run --scenarios create,latency --no-baseline` (N objects, the latency scenario behind the
backlog of N) with the operator sending every reconcile's trace to it (--otlp-endpoint,
--trace-sampling-ratio 1), then, for each measured change, finds the reconcile of that object that
sent the Deployment write and prints:

  reconcile start   the change's start (the harness, just before its PATCH of the MyResource) to the
                    reconcile's start: the user's PATCH, the watch event reaching the operator, the queue
  event wait        the watch event reaching the operator to the reconcile's start (the span's
                    myoperator.trigger.wait_seconds: the operator's queue)
  to write          the reconcile's start to its Deployment PATCH's start (the operator's own work)
  write             the PATCH's duration as the operator saw it (the API server's time, and the wire)
  server, observer  the two latencies bench/run reports (bench/README.md, "Latency, two ways")

With --results, reads an earlier run's results.json and asks a Jaeger that still runs (--query-url)
instead of running anything. Tracing costs the operator CPU: use these runs for the shape, never for
the figures of bench/run's table.
"""
import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_jaeger(folder):
    """A Jaeger process, its OTLP endpoint and its query URL."""
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-tools.sh"), "--print-bin-dir", "jaeger"],
                             check=True, capture_output=True, text=True).stdout.strip()
    otlp, query, query_grpc = free_port(), free_port(), free_port()
    config = os.path.join(folder, "jaeger.yaml")
    with open(config, "w") as f:
        f.write(f"""service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {{receivers: [otlp], exporters: [jaeger_storage_exporter]}}
  telemetry: {{metrics: {{level: none}}, logs: {{level: warn}}}}
extensions:
  jaeger_query:
    enable_tracing: false
    storage: {{traces: memory}}
    http: {{endpoint: "127.0.0.1:{query}"}}
    grpc: {{endpoint: "127.0.0.1:{query_grpc}"}}
  jaeger_storage:
    backends: {{memory: {{memory: {{max_traces: 200000}}}}}}
receivers:
  otlp: {{protocols: {{http: {{endpoint: "127.0.0.1:{otlp}"}}}}}}
exporters:
  jaeger_storage_exporter: {{trace_storage: memory}}
""")
    log = open(os.path.join(folder, "jaeger.log"), "w")
    process = subprocess.Popen([os.path.join(bin_dir, "jaeger"), f"--config={config}"], stdout=log, stderr=log)
    query_url = f"http://127.0.0.1:{query}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(query_url + "/api/services", timeout=2).read()
            return process, f"http://127.0.0.1:{otlp}", query_url
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.5)
    process.kill()
    sys.exit(f"latency_traces: Jaeger did not start (see {folder}/jaeger.log)")


def traces_of(query_url, namespace, name, started):
    query = urllib.parse.urlencode({
        "service": "my-operator",
        "tags": json.dumps({"k8s.namespace.name": namespace, "myoperator.name": name}),
        "start": int((started - 1) * 1e6), "end": int((started + 30) * 1e6), "limit": 100,
    })
    with urllib.request.urlopen(f"{query_url}/api/traces?{query}", timeout=30) as answer:
        return json.load(answer)["data"]


def breakdown(query_url, namespace, name, started):
    """The first reconcile of the object that started after `started` and wrote its Deployment."""
    candidates = []
    for trace in traces_of(query_url, namespace, name, started):
        spans = trace["spans"]
        roots = [s for s in spans if s["operationName"] == "reconcile"]
        if not roots:
            continue
        root = roots[0]
        begin = root["startTime"] / 1e6
        writes = sorted((s for s in spans if s["operationName"] == "PATCH deployments"),
                        key=lambda s: s["startTime"])
        if begin < started or not writes:
            continue
        tags = {t["key"]: t["value"] for t in root["tags"]}
        write = writes[0]
        candidates.append((begin, {
            "reconcile_start": begin - started,
            "event_wait": float(tags.get("myoperator.trigger.wait_seconds", 0.0)),
            "to_write": write["startTime"] / 1e6 - begin,
            "write": write["duration"] / 1e6,
        }))
    return min(candidates, key=lambda c: c[0])[1] if candidates else None


def report(results, query_url):
    """The table of one run's changes, from its results.json and the Jaeger holding its traces."""
    with open(results) as f:
        record = json.load(f)["runs"][0]["scenarios"]["latency"]
    changes = record.get("latency_changes")
    if not changes:
        sys.exit(f"latency_traces: {results} has no latency_changes (a bench/run older than them)")
    rows = []
    print("| change | reconcile start s | event wait s | to write s | write s | server s | observer s |")
    print("|---|---|---|---|---|---|---|")
    for (namespace, name, started), server, observed in zip(
            changes, record["server_latencies_seconds"], record["latencies_seconds"]):
        found = breakdown(query_url, namespace, name, started)
        if found is None:
            print(f"| {namespace}/{name} | no traced reconcile wrote its Deployment | | | | {server} | {observed} |")
            continue
        rows.append(found)
        print(f"| {namespace}/{name} | {found['reconcile_start']:.3f} | {found['event_wait']:.4f} | "
              f"{found['to_write']:.4f} | {found['write']:.3f} | {server} | {observed} |")
    if rows:
        print()
        for key in ("reconcile_start", "event_wait", "to_write", "write"):
            values = [row[key] for row in rows]
            print(f"{key}: median {statistics.median(values):.4f} s, max {max(values):.4f} s")
    if len(rows) != len(changes):
        sys.exit(f"latency_traces: {len(changes) - len(rows)} changes without a traced Deployment write")



def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--binary", default=os.path.join(REPO, "build", "my-operator"))
    parser.add_argument("--results", help="an earlier run's results.json (with --query-url)")
    parser.add_argument("--query-url", help="the Jaeger query URL that holds --results' traces")
    parser.add_argument("run_options", nargs="*", help="more bench/run options (after --)")
    args = parser.parse_args()

    if args.results and not args.query_url:
        sys.exit("latency_traces: --results needs --query-url")
    jaeger = None
    try:
        if args.results:
            report(args.results, args.query_url)
            return
        folder = tempfile.mkdtemp(prefix="myop-latency-traces-")
        jaeger, otlp, query_url = start_jaeger(folder)
        operator = (f"exec {shlex.quote(os.path.abspath(args.binary))} --kubeconfig {{kubeconfig}} "
                    "--metrics-bind-address 127.0.0.1:{metrics_port} --health-probe-bind-address "
                    f"127.0.0.1:{{health_port}} --log-format text --otlp-endpoint {otlp} --trace-sampling-ratio 1")
        results_root = os.path.join(folder, "results")
        command = [os.path.join(REPO, "bench", "run"), "--n", str(args.n), "--scenarios", "create,latency",
                   "--no-baseline", "--no-plot", "--results", results_root, "--name", "traced",
                   "--operator-cmd", operator, "--ready-url", "http://127.0.0.1:{health_port}/readyz",
                   "--metrics-url", "http://127.0.0.1:{metrics_port}/metrics", *args.run_options]
        if subprocess.run(command).returncode != 0:
            sys.exit("latency_traces: bench/run failed")
        report(os.path.join(results_root, sorted(os.listdir(results_root))[-1], "results.json"), query_url)
    finally:
        if jaeger is not None:
            jaeger.kill()
            jaeger.wait()


if __name__ == "__main__":
    main()
