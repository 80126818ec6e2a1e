#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots of EXPERIMENTS.md from the experiments' CSV output (experiments/results/).

    python3 -m pip install matplotlib
    python3 experiments/plot.py [results_dir]

Writes small PNGs (< 150 KB) next to the CSVs: b1_allocation.png (openb, FGD's protocol, over
FGD's published curves), a_hit_rate.png (Experiment A, hit rate and victim cost per solver) and
c_loaning.png (Experiment C: GPU usage over time with and without loaning, Aryl's reductions
per load against the published ones, Compass's cache hit rates).
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_b1(results):
    path = os.path.join(results, "b1_curves.csv")
    if not os.path.exists(path):
        return
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            series.setdefault(row["series"], ([], []))
            series[row["series"]][0].append(float(row["load_percent"]))
            series[row["series"]][1].append(float(row["allocation_percent"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=90)
    styles = {
        "FGD 01-Random": ("tab:gray", "--"),
        "FGD 05-BestFit": ("tab:blue", "--"),
        "FGD 06-FGD": ("tab:green", "--"),
        "random": ("tab:gray", "-"),
        "best_fit (FGD integer scores)": ("tab:blue", "-"),
        "best_fit (exact scores)": ("tab:cyan", ":"),
        "find_placement": ("tab:red", "-"),
    }
    for name, (x, y) in sorted(series.items()):
        color, style = styles.get(name, ("black", "-"))
        label = name.replace("FGD 0", "FGD published: ").replace("1-", "").replace("5-", "").replace("6-", "")
        if not name.startswith("FGD"):
            label = "ours: " + name
        ax.plot(x, y, style, color=color, label=label, linewidth=1.4)
    ax.set_xlim(60, 130)
    ax.set_ylim(60, 100)
    ax.set_xlabel("arrived load (% of 6,212 GPUs requested)")
    ax.set_ylabel("GPU allocation ratio (%)")
    ax.set_title("openb default trace, FGD's protocol (mean of 10 seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(results, "b1_allocation.png"))


def plot_a(results):
    rows = []
    for name in ("a_41.csv", "a_100.csv"):
        path = os.path.join(results, name)
        if os.path.exists(path):
            with open(path) as f:
                rows.extend(csv.DictReader(f))
    if not rows:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.4), dpi=90)
    sizes = sorted({r["nodes"] for r in rows}, key=int)
    solvers = []
    for r in rows:
        if r["solver"] not in solvers:
            solvers.append(r["solver"])
    width = 0.8 / max(len(sizes), 1)
    for i, size in enumerate(sizes):
        chosen = {r["solver"]: r for r in rows if r["nodes"] == size}
        xs = [k + i * width for k in range(len(solvers))]
        left.bar(xs, [float(chosen[s]["hit rate %"]) for s in solvers], width, label=f"{size} nodes")
        right.bar(xs, [float(chosen[s]["victims/preemption"]) for s in solvers], width, label=f"{size} nodes")
    for ax, title in ((left, "topology hit rate (%)"), (right, "victims per preemption")):
        ax.set_xticks([k + width * (len(sizes) - 1) / 2 for k in range(len(solvers))])
        ax.set_xticklabels([s.replace("_", "\n") for s in solvers], fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    left.axhline(44.5, color="black", linestyle="--", linewidth=1)
    left.text(-0.4, 46.5, "paper: Gödel 44.5%", fontsize=7)
    left.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(results, "a_hit_rate.png"))


def plot_c(results):
    curves_path = os.path.join(results, "c_curves.csv")
    ratios_path = os.path.join(results, "c_ratios.csv")
    compass_path = os.path.join(results, "c_compass.csv")
    if not all(os.path.exists(p) for p in (curves_path, ratios_path, compass_path)):
        return
    series = {}
    with open(curves_path) as f:
        for row in csv.DictReader(f):
            hour = float(row["hour"])
            if hour > 72:  # the first three days are enough to see the pattern
                continue
            series.setdefault(row["series"], ([], []))
            series[row["series"]][0].append(hour)
            series[row["series"]][1].append(float(row["usage_percent"]))
    with open(ratios_path) as f:
        ratios = [r for r in csv.DictReader(f) if r["training load"]]
    with open(compass_path) as f:
        compass = list(csv.DictReader(f))
    fig, (usage, gains, cache) = plt.subplots(1, 3, figsize=(12.0, 3.6), dpi=80,
                                              gridspec_kw={"width_ratios": [1.5, 1.0, 0.8]})
    styles = {
        "inference servers busy": ("tab:gray", ":"),
        "no loaning / no scaling": ("tab:blue", "-"),
        "loaning + scaling (Aryl)": ("tab:red", "-"),
    }
    for name, (color, style) in styles.items():
        if name in series:
            x, y = series[name]
            label = "inference servers busy (%)" if name.startswith("inference") else name
            usage.step(x, y, style, color=color, label=label, linewidth=1.2, where="post")
    usage.set_xlabel("hour (training load 1.2)")
    usage.set_ylabel("cluster GPU usage (%)")
    usage.set_ylim(0, 105)
    usage.set_title("whole-cluster GPU usage, first 3 days", fontsize=9)
    usage.grid(alpha=0.3)
    usage.legend(fontsize=7, loc="lower right")

    aryl = [r for r in ratios if r["against no loaning / no scaling"] == "loaning + scaling (Aryl)"]
    loads = [r["training load"] for r in aryl]
    xs = range(len(loads))
    width = 0.38
    queue = [float(r["queuing time reduction"].rstrip("x")) for r in aryl]
    jct = [float(r["JCT reduction"].rstrip("x")) for r in aryl]
    gains.bar([x - width / 2 for x in xs], queue, width, label="queuing time reduction", color="tab:orange")
    gains.bar([x + width / 2 for x in xs], jct, width, label="JCT reduction", color="tab:purple")
    gains.axhline(1.53, color="tab:orange", linestyle="--", linewidth=1)
    gains.axhline(1.50, color="tab:purple", linestyle=":", linewidth=1)
    gains.text(-0.45, 1.7, "Aryl published: 1.53x / 1.50x", fontsize=7)
    gains.set_yscale("log")
    gains.set_xticks(list(xs))
    gains.set_xticklabels([f"load {l}" for l in loads], fontsize=8)
    gains.set_title("loaning + scaling vs neither (x, log)", fontsize=9)
    gains.grid(axis="y", alpha=0.3)
    gains.legend(fontsize=7, loc="upper left")

    names = [r["policy"].replace(" (Compass earliest start)", "\n(Compass)").replace("cache-blind ", "blind\n")
             for r in compass]
    cache.bar(range(len(compass)), [float(r["cache hit rate %"]) for r in compass],
              color=["tab:green", "tab:gray", "tab:gray"][: len(compass)])
    cache.set_xticks(range(len(compass)))
    cache.set_xticklabels(names, fontsize=7)
    cache.set_ylim(0, 100)
    cache.set_title("Compass: model cache hit rate (%)", fontsize=9)
    cache.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(results, "c_loaning.png"))


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results")
    plot_b1(results)
    plot_a(results)
    plot_c(results)


if __name__ == "__main__":
    main()
