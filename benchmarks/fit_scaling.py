#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns Google Benchmark JSON output of the topopreempt benchmarks into the Markdown tables of
BENCHMARKS.md: decision time as a ratio of the two floors (priority scan, footprint scan),
quality ratios, the growth exponent of each solver's median decision time from 100 to 10,000
nodes (least squares on log-log), branch-and-bound vs exhaustive_subsets on many-victim nodes,
CBC, and the state's own costs.

Usage:
  fit_scaling.py solvers.json [--state state.json] [--cbc cbc.json] [--many many.json]
"""
import argparse
import json
import math
import re
import statistics
import sys

SOLVERS = ["greedy", "knapsack", "branch_and_bound", "kube_default", "exhaustive_subsets"]
NAME = re.compile(r"^(?P<solver>[a-z_]+)/(?P<kind>[a-z_0-9]+)/nodes:(?P<nodes>\d+)$")


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["benchmarks"]


def fit_exponent(points):
    """Slope of log(time) against log(nodes), least squares; None with fewer than 2 points."""
    points = [(n, t) for n, t in points if t > 0]
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else None


def fmt(value, digits=3):
    if value is None:
        return "–"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def to_ms(row):
    return row["cpu_time"] * {"us": 1e-3, "ms": 1.0, "ns": 1e-6, "s": 1e3}[row["time_unit"]]


def solver_tables(rows):
    decisions = {}
    scans = {"priority_scan": {}, "footprint_scan": {}}
    for row in rows:
        if row.get("error_occurred"):
            continue
        floor, _, size = row["name"].partition("/nodes:")
        if floor in scans:
            scans[floor][int(size)] = to_ms(row)  # CPU time, same unit as the decisions
            continue
        match = NAME.match(row["name"])
        if match:
            key = (match["solver"], match["kind"], int(match["nodes"]))
            decisions[key] = row
    sizes = sorted({n for _, _, n in decisions})
    kinds = []
    for _, kind, _ in decisions:
        if kind not in kinds:
            kinds.append(kind)
    solvers = [s for s in SOLVERS if any(k[0] == s for k in decisions)]
    out = []

    def cell(row, solver):
        if row is None:
            return "–"
        text = f"{fmt(row['p50_ms'])} ({fmt(row['x_scan'])}× / {fmt(row['x_fscan'])}×)"
        if solver == "branch_and_bound" and row["optimal"] < 1:
            text += f", optimal {fmt(row['optimal'] * 4)}/4"
        return text

    for nodes in sizes:
        out.append(f"### Decision time at {nodes:,} nodes: median CPU ms (× priority scan / × footprint scan)\n")
        out.append(f"Priority scan {fmt(scans['priority_scan'].get(nodes))} ms, footprint scan "
                   f"{fmt(scans['footprint_scan'].get(nodes))} ms.\n")
        out.append("| kind | " + " | ".join(solvers) + " |")
        out.append("|---" * (len(solvers) + 1) + "|")
        for kind in kinds:
            out.append(f"| {kind} | " + " | ".join(cell(decisions.get((s, kind, nodes)), s) for s in solvers) + " |")
        out.append("")

    out.append("### Summary: median over kinds of the median decision time, ms (median × priority scan / × footprint scan)\n")
    out.append("| nodes | priority scan | footprint scan | " + " | ".join(solvers) + " |")
    out.append("|---" * (len(solvers) + 3) + "|")
    for nodes in sizes:
        cells = []
        for solver in solvers:
            mine = [decisions[(solver, k, nodes)] for k in kinds if (solver, k, nodes) in decisions]
            cells.append(f"{fmt(statistics.median(r['p50_ms'] for r in mine))} "
                         f"({fmt(statistics.median(r['x_scan'] for r in mine))}× / "
                         f"{fmt(statistics.median(r['x_fscan'] for r in mine))}×)" if mine else "–")
        out.append(f"| {nodes:,} | {fmt(scans['priority_scan'].get(nodes))} | "
                   f"{fmt(scans['footprint_scan'].get(nodes))} | " + " | ".join(cells) + " |")
    out.append("")

    out.append("### Growth exponent of the median decision time, 100 → 10,000 nodes (log-log fit)\n")
    out.append("| kind | " + " | ".join(solvers) + " |")
    out.append("|---" * (len(solvers) + 1) + "|")
    for kind in kinds:
        cells = []
        for solver in solvers:
            points = [(n, decisions[(solver, kind, n)]["p50_ms"]) for n in sizes if (solver, kind, n) in decisions]
            cells.append(fmt(fit_exponent(points), 2))
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    for floor in scans:
        out.append(f"| *{floor.replace('_', ' ')}* | {fmt(fit_exponent(sorted(scans[floor].items())), 2)} |"
                   + " |" * (len(solvers) - 1))
    out.append("")

    out.append("### Quality per decision (mean over the 4 variants of each kind)\n")
    out.append("cost ratio = cost / branch-and-bound's proven optimum (decisions where one was proven "
               "with positive cost); same = fraction with identical cost; hit = topology hit rate.\n")
    head = ["kind", "nodes", "B&B optimal", "B&B gap", "B&B nodes", "greedy cost ratio",
            "knapsack cost ratio", "knapsack optimal", "kube cost ratio", "kube hit", "kube victims",
            "exhaustive same", "exhaustive / B&B time"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|---" * len(head) + "|")
    for nodes in sizes:
        for kind in kinds:
            get = lambda solver: decisions.get((solver, kind, nodes))
            bnb, greedy, dp, kube, exh = (get(s) for s in
                                          ["branch_and_bound", "greedy", "knapsack", "kube_default", "exhaustive_subsets"])
            ratio = lambda row: fmt(row["cost_ratio"]) if row and row["ref_proven"] > 0 else "–"
            cells = [kind, f"{nodes:,}",
                     fmt(bnb["optimal"]) if bnb else "–",
                     fmt(bnb["gap"]) if bnb else "–",
                     fmt(bnb["nodes"]) if bnb else "–",
                     ratio(greedy), ratio(dp),
                     fmt(dp["optimal"]) if dp else "–",
                     ratio(kube),
                     fmt(kube["topo_hit"]) if kube else "–",
                     fmt(kube["victims"]) if kube else "–",
                     fmt(exh["same_cost"]) if exh and exh["ref_proven"] > 0 else "–",
                     fmt(exh["p50_ms"] / bnb["p50_ms"]) if exh and bnb else "–"]
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def many_victims_table(rows):
    out = ["### Branch-and-bound vs exhaustive_subsets on GPU-share nodes (many victims)\n",
           "| kind | nodes | pods | eligible/node (max) | B&B ms | exhaustive ms | exhaustive finished | "
           "same cost | speedup (min, median, of means) | B&B nodes | exhaustive subsets | greedy cost ratio | "
           "B&B root bound ÷ optimum | per-GPU bound ÷ optimum |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        parts = row["name"].split("/")
        if row.get("error_occurred"):
            out.append(f"| {parts[1]} | {parts[2]} | ERROR: {row.get('error_message', '')} |")
            continue
        out.append(f"| {parts[1]} | {int(parts[2].split(':')[1]):,} | {row['workloads']:.0f} | "
                   f"{fmt(row['eligible_max'])} | {fmt(row['bnb_ms'])} | {fmt(row['exh_ms'])} | "
                   f"{fmt(row['exh_finished'] * 4)}/4 | {fmt(row['same_cost'])} | "
                   f"{fmt(row['speedup_min'])}×, {fmt(row['speedup_median'])}×, {fmt(row['exh_ms'] / row['bnb_ms'])}× | {fmt(row['bnb_nodes'])} | "
                   f"{fmt(row['exh_subsets'])} | {fmt(row['greedy_ratio'])} | {fmt(row['root_bound_ratio'])} | "
                   f"{fmt(row['device_bound_ratio'])} |")
    out.append("")
    return out


def cbc_table(rows):
    out = ["### Branch-and-bound and knapsack vs CBC (per-domain 0/1 covering)\n",
           "| family | instances | eligible victims (mean/max) | B&B µs | knapsack µs | CBC µs | "
           "CBC/B&B (total, median) | CBC/knapsack (total, median) | knapsack exact | "
           "greedy cost / optimum (mean, worst, ≤5 %) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("error_occurred"):
            out.append(f"| {row['name']} | ERROR: {row.get('error_message', '')} |")
            continue
        out.append(f"| {row['name'].split('/')[-1]} | {row['instances']:.0f} | "
                   f"{fmt(row['eligible_victims'])}/{row['max_eligible']:.0f} | {fmt(row['bnb_us'])} | "
                   f"{fmt(row['knapsack_us'])} | {fmt(row['cbc_us'])} | "
                   f"{fmt(row['cbc_over_bnb'])}, {fmt(row['median_cbc_over_bnb'])} | "
                   f"{fmt(row['cbc_over_knapsack'])}, {fmt(row['median_cbc_over_knapsack'])} | "
                   f"{fmt(row['knapsack_exact'])} | "
                   f"{row['greedy_cost_ratio']:.4f}, {row['greedy_worst_ratio']:.3f}, "
                   f"{fmt(row['greedy_within_5pct'])} |")
    out.append("")
    return out


def state_table(rows):
    out = ["### State: scan, incremental update, memory, generation\n",
           "| benchmark | CPU time | counters |", "|---|---|---|"]
    for row in rows:
        counters = {k: v for k, v in row.items() if k not in {
            "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
            "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit"}}
        text = ", ".join(f"{k}={fmt(v * 1e9 if k.startswith('time_per') else v)}"
                         + ("ns" if k.startswith("time_per") else "")
                         for k, v in sorted(counters.items()) if isinstance(v, (int, float)))
        out.append(f"| {row['name']} | {fmt(row['cpu_time'])} {row['time_unit']} | {text} |")
    out.append("")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solvers")
    parser.add_argument("--state")
    parser.add_argument("--cbc")
    parser.add_argument("--many")
    args = parser.parse_args()
    lines = solver_tables(load(args.solvers))
    if args.many:
        lines += many_victims_table(load(args.many))
    if args.cbc:
        lines += cbc_table(load(args.cbc))
    if args.state:
        lines += state_table(load(args.state))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
