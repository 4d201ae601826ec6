#!/usr/bin/env python3
"""Plots of the cluster in virtual time (issue 30), as PNG and SVG, from the benchmarks' own output.

    /usr/bin/python3 bench/sim/plot_goodput.py --build build --out docs/plots \\
        [--cluster LOG ...]   # logs of build/bench/cluster_run, one per policy

  - ettr-vs-snapshot-interval: the synchronous whole-cluster job (build/bench/sync_job_sweep, run
    here) at 16,384, 98,304 and 131,072 GPUs, ETTR against the snapshot interval, one line per
    cluster size and recovery cost D, with the 95% interval as a band;
  - ettr-vs-scale: the same at the 5-minute interval, ETTR against the GPUs, one line per D;
  - policies: ETTR of each cluster_run log split into its scheduling, runtime and program goodput
    (their product), one bar per log, labelled from the log's own header (spares, elastic, standby,
    lemon rule), with the 95% interval of ETTR.

Every number drawn is one the benchmark printed; nothing is computed here but the layout.
"""
import argparse
import os
import re
import subprocess
import sys

ESTIMATE = re.compile(r"([0-9.]+) \+- ([0-9.]+) \(95%, (\d+) runs\)")
CELL = re.compile(r"([0-9.]+) \+- ([0-9.]+)")  # the sweep's table: the runs are in its title


def sweep(build, seeds, days):
    """The rows of sync_job_sweep's table: (gpus, T minutes, {D minutes: (mean, half-width)})."""
    out = subprocess.run([os.path.join(build, "bench", "sync_job_sweep"), "--seeds", str(seeds), "--days", str(days)],
                         check=True, capture_output=True, text=True).stdout
    header, rows = None, []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "GPUs":
            header = [int(re.search(r"D = (\d+)", c).group(1)) for c in cells[3:]]
            continue
        if header is None or not cells or not cells[0].isdigit():
            continue
        values = {}
        for d, cell in zip(header, cells[3:]):
            m = CELL.fullmatch(cell)
            if not m:
                sys.exit(f"plot_goodput: sync_job_sweep printed a cell that is no estimate: {cell!r}")
            values[d] = (float(m.group(1)), float(m.group(2)))
        rows.append((int(cells[0]), int(cells[2]), values))
    if not rows:
        sys.exit("plot_goodput: sync_job_sweep printed no table")
    return rows


def cluster_log(path):
    """What one cluster_run log says: its label and the estimates of ETTR and its three parts."""
    text = open(path).read()
    head = re.search(r"cluster_run: (\d+) nodes x 8 GPUs, job on (\S+), (\d+) days, (\d+) seeds, (\d+) lemons \(x\d+\), "
                     r"lemon rule (\w+), standby (\w+), restart (\d+) ms, snapshots every (\d+) s", text)
    if not head:
        sys.exit(f"plot_goodput: {path} is not a cluster_run log")
    nodes, size, _, _, lemons, rule, standby, restart, snapshot = head.groups()
    job = f"elastic {size}" if ".." in size else f"{int(nodes) - int(size)} spares"
    label = job + (", standby" if standby == "on" else "") + (f", {lemons} lemons" if lemons != "0" else "")
    label += ", lemon rule" if rule == "on" else ""
    label += f"\nrestart {int(restart) / 1000:g} s, snapshots {int(snapshot) / 60:g} min"
    parts = {}
    for name in ("ETTR", "scheduling", "runtime", "program"):
        m = re.search(rf"^\s*{name} {ESTIMATE.pattern}", text, re.M)
        if not m:
            sys.exit(f"plot_goodput: {path} has no {name} line (did the run finish?)")
        parts[name] = (float(m.group(1)), float(m.group(2)))
    return label, int(nodes) * 8, parts


def save(fig, out, name):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), dpi=120, bbox_inches="tight")
    print(f"plot_goodput: wrote {os.path.join(out, name)}.png and .svg")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs/plots")
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--days", type=int, default=54)
    ap.add_argument("--cluster", nargs="*", default=[], help="cluster_run logs, one bar each")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_goodput: needs python3-matplotlib (scripts/setup.sh installs it)")
    os.makedirs(args.out, exist_ok=True)

    rows = sweep(args.build, args.seeds, args.days)
    sizes = sorted({g for g, _, _ in rows})
    costs = sorted(rows[0][2])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for gpus in sizes:
        for d in costs:
            pts = sorted((t, v[d]) for g, t, v in rows if g == gpus)
            ts = [t for t, _ in pts]
            mean = [m for _, (m, _) in pts]
            half = [h for _, (_, h) in pts]
            line, = ax.plot(ts, mean, marker="o", label=f"{gpus:,} GPUs, D = {d} min")
            ax.fill_between(ts, [m - h for m, h in zip(mean, half)], [m + h for m, h in zip(mean, half)],
                            color=line.get_color(), alpha=0.2)
    ax.set_xlabel("snapshot interval T (minutes of training)")
    ax.set_ylabel("ETTR")
    ax.set_title(f"Synchronous job, Llama 3 interruption rates ({args.seeds} seeds x {args.days} days)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    save(fig, args.out, "ettr-vs-snapshot-interval")
    plt.close(fig)

    shortest = min(t for _, t, _ in rows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for d in costs:
        pts = sorted((g, v[d]) for g, t, v in rows if t == shortest)
        ax.errorbar([g for g, _ in pts], [m for _, (m, _) in pts], yerr=[h for _, (_, h) in pts], marker="o",
                    capsize=3, label=f"D = {d} min")
    ax.axhline(0.97, color="gray", linestyle="--", linewidth=1)
    ax.axhline(0.90, color="gray", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("ETTR")
    ax.set_title(f"Synchronous job, snapshots every {shortest} min: ETTR against scale (goals dashed)")
    ax.grid(alpha=0.3)
    ax.legend()
    save(fig, args.out, "ettr-vs-scale")
    plt.close(fig)

    if args.cluster:
        runs = [cluster_log(p) for p in args.cluster]
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(runs)), 4.5))
        xs = range(len(runs))
        width = 0.2
        for i, (name, color) in enumerate((("scheduling", "#4c72b0"), ("runtime", "#55a868"),
                                           ("program", "#c44e52"), ("ETTR", "#333333"))):
            ax.bar([x + (i - 1.5) * width for x in xs], [r[2][name][0] for r in runs], width,
                   yerr=[r[2][name][1] for r in runs], capsize=2, color=color, label=name)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r[0] for r in runs], rotation=15, ha="right", fontsize=8)
        low = min(r[2][n][0] for r in runs for n in ("scheduling", "runtime", "program", "ETTR"))
        ax.set_ylim(max(0.0, low - 0.05), 1.0)
        ax.set_ylabel("goodput")
        ax.set_title(f"{runs[0][1]:,} GPUs in virtual time, the controller's own decisions: each policy")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, args.out, "policies")
        plt.close(fig)


if __name__ == "__main__":
    main()
