#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the Python binding adds to one decision: a 10,000-node generated cluster (the
benchmarks' dense 8-GPU nodes at 92% GPU occupancy), one branch-and-bound decision per
preemptor kind, timed through Python (`solver.solve(...)`, a plan object back) against the same
decision timed inside C++ (`_native_solve_seconds`, in the same extension: same compiler and
flags). Rounds alternate which of the two goes first, so that machine load and caches treat
both alike; medians and minima are reported, with the absolute overhead per call. On both sides
the clock covers the call and the plan's return, not the plan's destruction.
Goal: Python / C++ <= 1.10 (the crossing is O(plan): references in, the plan out).

Usage: python benchmarks/python_overhead.py [--nodes 10000] [--rounds 51] [--model lost_work]
"""
from __future__ import annotations

import argparse
import statistics
import time

import topopreempt as tp

MODELS = {"lost_work": tp.LostWork, "priority_weighted": tp.PriorityWeighted, "victim_count": tp.VictimCount}
KINDS = [(tp.PreemptorKind.numa, 1), (tp.PreemptorKind.nvlink_island, 2), (tp.PreemptorKind.socket, 4),
         (tp.PreemptorKind.node, 8), (tp.PreemptorKind.rack_gang, 16)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=51)
    parser.add_argument("--model", choices=sorted(MODELS), default="lost_work")
    args = parser.parse_args()

    started = time.perf_counter()
    state = tp.generate_cluster(tp.ClusterSpec(nodes=args.nodes))
    print(f"cluster: {args.nodes} nodes, {len(state)} workloads, {len(state.topology)} domains, "
          f"state {state.memory_bytes() / 2**20:.1f} MiB (generated in {time.perf_counter() - started:.1f} s)")
    model = MODELS[args.model]()
    solver = tp.branch_and_bound
    print(f"solver: {solver.name}, cost model: {model.name}, {args.rounds} rounds (medians)\n")
    print(f"{'preemptor':<21}{'status':<22}{'victims':>8}{'C++ us':>10}{'Python us':>11}{'ratio':>7}"
          f"{'C++ min':>10}{'Py min':>10}{'+us/call':>10}")
    clock = time.perf_counter
    worst = 0.0
    for kind, gpus in KINDS:
        preemptor = tp.make_preemptor(kind, gpus)
        plan = solver.solve(state, preemptor, model)  # warm caches and check the decision
        native: list[float] = []
        python: list[float] = []
        for round_index in range(args.rounds):
            for side in ((0, 1) if round_index % 2 == 0 else (1, 0)):
                if side == 0:
                    native += tp._core._native_solve_seconds(solver, state, preemptor, model, 1)
                else:
                    begin = clock()
                    result = solver.solve(state, preemptor, model)
                    python.append(clock() - begin)
                    assert result.victim_ids() == plan.victim_ids()
                    # Freed here, outside the timed call: the C++ side's plan is destroyed after
                    # its clock stops too (assigning over the previous result would free it
                    # inside the next timed call).
                    del result
        cpp_us, py_us = 1e6 * statistics.median(native), 1e6 * statistics.median(python)
        worst = max(worst, py_us / cpp_us)
        print(f"{kind.name + ' ' + str(gpus) + ' GPU':<21}{str(plan.status):<22}{len(plan.victims):>8}"
              f"{cpp_us:>10.2f}{py_us:>11.2f}{py_us / cpp_us:>7.3f}{1e6 * min(native):>10.2f}"
              f"{1e6 * min(python):>10.2f}{py_us - cpp_us:>10.2f}")
    print(f"\nworst ratio {worst:.3f} (goal <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
