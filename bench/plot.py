"""Plot objects reconciled over time from bench/run's results.json: one panel per storm, one line per run.

usage: python plot.py results.json reconciled.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STORMS = ["create", "update", "delete"]


def main(results_path, png_path):
    with open(results_path) as f:
        report = json.load(f)
    storms = [s for s in STORMS if any(s in run.get("done_curves", {}) for run in report["runs"])]
    if not storms:
        print("plot.py: no storm curves to plot", file=sys.stderr)
        return 0
    figure, axes = plt.subplots(1, len(storms), figsize=(6 * len(storms), 4.5), squeeze=False)
    for axis, storm in zip(axes[0], storms):
        for run in report["runs"]:
            times = run.get("done_curves", {}).get(storm)
            if not times:
                continue
            style = "--" if run["name"] == "raw-baseline" else "-"
            axis.step([0] + times, list(range(len(times) + 1)), where="post", linestyle=style, label=run["name"])
        axis.set_title(f"{storm} storm, N={report['n']}")
        axis.set_xlabel("seconds since the storm began")
        axis.set_ylabel("objects done" if storm != "delete" else "objects gone")
        axis.grid(True, alpha=0.3)
        axis.legend(loc="lower right")
    machine = report.get("machine", {})
    figure.suptitle(
        f"objects reconciled over time ({machine.get('nproc')} cores, {machine.get('cpu_model', '?')})", fontsize=10
    )
    figure.tight_layout()
    figure.savefig(png_path, dpi=110)
    print(f"plot.py: wrote {png_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
