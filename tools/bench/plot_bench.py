#!/usr/bin/python3
"""Plot the CSV files written by `scn bench` into one PNG.

    scn bench model.onnx --synthetic 80000 --runs 200 --csv runs.csv
    scn bench model.onnx --sweep 10000,20000,...,300000 --sweep-csv sweep.csv --csv sweep_runs.csv
    /usr/bin/python3 tools/bench/plot_bench.py --runs runs.csv --sweep sweep.csv -o bench.png

--runs:  voxels,run,ms   (one row per timed forward): a latency histogram per voxel count
                         (at most the 6 largest groups), with the median marked.
--sweep: voxels,runs,median_ms,p99_ms,mean_ms,min_ms,max_ms: median latency against the voxel
                         count, with the min..p99 band.
Needs matplotlib (Debian: python3-matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import OrderedDict


def read_csv(path: str, columns: list[str]) -> list[dict[str, float]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise SystemExit(f"{path}: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        rows = []
        for line, row in enumerate(reader, start=2):
            try:
                rows.append({c: float(row[c]) for c in columns})
            except (TypeError, ValueError):
                raise SystemExit(f"{path}:{line}: not a number in {row}")
    if not rows:
        raise SystemExit(f"{path}: no data rows")
    return rows


def median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", help="per-run CSV (voxels,run,ms) from scn bench --csv")
    ap.add_argument("--sweep", help="sweep CSV from scn bench --sweep-csv")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--title", default="scn bench", help="figure title")
    args = ap.parse_args(argv)
    if not args.runs and not args.sweep:
        ap.error("give --runs and/or --sweep")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("matplotlib is missing: apt-get install python3-matplotlib")

    panels = [p for p in (args.runs, args.sweep) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    axes = axes[0]
    k = 0
    if args.runs:
        rows = read_csv(args.runs, ["voxels", "run", "ms"])
        groups: OrderedDict[int, list[float]] = OrderedDict()
        for r in rows:
            groups.setdefault(int(r["voxels"]), []).append(r["ms"])
        shown = sorted(groups, key=lambda v: len(groups[v]), reverse=True)[:6]
        ax = axes[k]
        k += 1
        for v in sorted(shown):
            ms = groups[v]
            _, _, patches = ax.hist(ms, bins=min(50, max(5, len(ms) // 4)), alpha=0.6,
                                    label=f"{v} voxels ({len(ms)} runs)")
            ax.axvline(median(ms), linestyle="--", linewidth=1, color=patches[0].get_facecolor(), alpha=1.0)
        ax.set_xlabel("forward latency (ms)")
        ax.set_ylabel("runs")
        ax.set_title("latency histogram (dashed: median)")
        ax.legend(fontsize=8)
    if args.sweep:
        rows = sorted(read_csv(args.sweep, ["voxels", "runs", "median_ms", "p99_ms", "min_ms"]),
                      key=lambda r: r["voxels"])
        ax = axes[k]
        x = [r["voxels"] for r in rows]
        ax.fill_between(x, [r["min_ms"] for r in rows], [r["p99_ms"] for r in rows], alpha=0.25, label="min..p99")
        ax.plot(x, [r["median_ms"] for r in rows], marker="o", label="median")
        ax.set_xlabel("input voxels")
        ax.set_ylabel("forward latency (ms)")
        ax.set_title("latency vs voxel count")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
