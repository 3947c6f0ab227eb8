#!/usr/bin/env python3
"""Timeline of CUDA-graph forwards from a scn_trace CSV (tools/trace/cupti_trace.cpp).

Groups the graph's kernels, memcpys and memsets by launch (CUPTI correlation id), drops warm-up launches and prints,
for the median launch, every graph node in start order with its offset, duration and the idle time before it
(no activity on any stream), plus per-launch span, busy time (union of all intervals) and idle time.

    /usr/bin/python3 tools/trace/trace_report.py trace.csv [--last 50] [--width 100] [--chain 'osplit|igemm|densify']

With --chain REGEX, the nodes whose kernel name matches are read as the main chain (the convs): every chain node that
starts more than --min-wait us after its predecessor in the chain ended is listed with that wait and the node that
ended last before it started (on another stream: the map kernel the conv most likely joined). CUPTI records no graph
edges, so the gate is a reading of the timeline, not a dependency.
"""
import argparse
import csv
import re
import statistics
import sys
from collections import defaultdict


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in ("start_ns", "end_ns", "stream", "correlation", "graph", "graph_node", "grid", "block", "regs",
                      "smem"):
                r[k] = int(r[k])
            rows.append(r)
    return rows


def union_length(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def short_name(name, width):
    # igemm_kernel<Tile<...>, ...> and friends: keep the head and the start of the template arguments
    name = name.replace("scn::cuda::", "").replace("(anonymous namespace)::", "")
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--last", type=int, default=50, help="analyse the last N graph launches (default 50)")
    ap.add_argument("--width", type=int, default=100, help="kernel name width")
    ap.add_argument("--chain", help="regular expression of the main chain's kernel names (e.g. 'osplit|igemm|densify')")
    ap.add_argument("--min-wait", type=float, default=1.0,
                    help="with --chain: waits shorter than this (us) are not listed")
    a = ap.parse_args()

    rows = load(a.csv)
    launches = defaultdict(list)
    for r in rows:
        if r["graph"]:
            launches[(r["graph"], r["correlation"])].append(r)
    if not launches:
        sys.exit(f"{a.csv}: no CUDA-graph activity (run with the CUDA graph on)")
    # the biggest graph is the forward; the tuner and other graphs are left out
    by_graph = defaultdict(list)
    for key, evs in launches.items():
        by_graph[key[0]].append((min(e["start_ns"] for e in evs), evs))
    graph = max(by_graph, key=lambda g: (len(by_graph[g]), max(len(e) for _, e in by_graph[g])))
    runs = [evs for _, evs in sorted(by_graph[graph], key=lambda t: t[0])][-a.last:]

    spans, busys = [], []
    per_node = defaultdict(lambda: {"off": [], "dur": [], "idle": []})
    info = {}
    for evs in runs:
        evs = sorted(evs, key=lambda e: (e["start_ns"], e["end_ns"]))
        t0 = evs[0]["start_ns"]
        t1 = max(e["end_ns"] for e in evs)
        spans.append((t1 - t0) / 1e3)
        busys.append(union_length([(e["start_ns"], e["end_ns"]) for e in evs]) / 1e3)
        frontier = t0
        for e in evs:
            n = per_node[e["graph_node"]]
            n["off"].append((e["start_ns"] - t0) / 1e3)
            n["dur"].append((e["end_ns"] - e["start_ns"]) / 1e3)
            n["idle"].append(max(0, e["start_ns"] - frontier) / 1e3)
            frontier = max(frontier, e["end_ns"])
            info[e["graph_node"]] = e

    med = statistics.median
    print(f"{a.csv}: graph {graph}, {len(runs)} launches analysed, {len(per_node)} nodes per launch")
    print(f"span   median {med(spans):8.1f} us  (min {min(spans):.1f}, max {max(spans):.1f})")
    print(f"busy   median {med(busys):8.1f} us  (at least one kernel/copy running)")
    print(f"idle   median {med([s - b for s, b in zip(spans, busys)]):8.1f} us  (nothing running)")
    print()
    print(f"{'start':>8} {'dur':>7} {'idle<':>6} {'stream':>6} {'grid':>6} {'blk':>4} {'regs':>4} {'smem':>6}  name")
    order = sorted(per_node, key=lambda k: med(per_node[k]["off"]))
    cats = defaultdict(float)
    for k in order:
        n, e = per_node[k], info[k]
        d = med(n["dur"])
        head = e["name"].split("<")[0].split("(")[0]
        cats[head] += d
        print(f"{med(n['off']):8.1f} {d:7.1f} {med(n['idle']):6.1f} {e['stream']:6d} {e['grid']:6d} {e['block']:4d} "
              f"{e['regs']:4d} {e['smem']:6d}  {short_name(e['name'], a.width)}")
    print()
    print("time by kernel (sum of median durations, all streams):")
    for head, t in sorted(cats.items(), key=lambda t: -t[1]):
        print(f"  {t:8.1f} us  {head}")
    if a.chain:
        print_chain_waits(per_node, info, order, a)


def print_chain_waits(per_node, info, order, a):
    """Waits of the chain's nodes for something other than their predecessor in the chain (medians over launches)."""
    med = statistics.median
    chain_re = re.compile(a.chain)
    start = {k: med(per_node[k]["off"]) for k in per_node}
    end = {k: start[k] + med(per_node[k]["dur"]) for k in per_node}
    chain = [k for k in order if chain_re.search(info[k]["name"])]
    print()
    print(f"waits on the chain ({len(chain)} nodes matching '{a.chain}'; start, wait after the previous chain "
          "node's end, node, and the node that ended last before it):")
    total = 0.0
    for prev, k in zip(chain, chain[1:]):
        wait = start[k] - end[prev]
        if wait < a.min_wait:
            continue
        total += wait
        before = [j for j in per_node if j != k and j != prev and end[j] <= start[k] + 0.05]
        gate = max(before, key=lambda j: end[j]) if before else None
        gate_text = f"{short_name(info[gate]['name'], a.width)} (ended {end[gate]:.1f})" if gate is not None else "-"
        print(f"{start[k]:8.1f} {wait:6.1f}  {short_name(info[k]['name'], a.width)}  <- {gate_text}")
    print(f"  {total:8.1f} us  waited on the chain in all (waits of {a.min_wait} us or more)")


if __name__ == "__main__":
    main()
