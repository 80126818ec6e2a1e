# SPDX-License-Identifier: MIT
"""Experiment A (EXPERIMENTS.md) through Python: the paper's 8x RTX 4090 servers, NUMA- and
socket-guaranteed LLM serving with a diurnal load over preemptible batch jobs; topology hit rate
of Kubernetes' DefaultPreemption against branch-and-bound, plotted to a PNG. The trace is
experiments/experiment_a.cpp's, draw for draw (same seed, same jobs).
Usage: python experiment_a.py [nodes=41] [days=1] [out=experiment_a.png]"""
import math
import sys
from typing import Callable

import matplotlib
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import topopreempt as tp

HOUR, DAY = 3600.0, 86400.0
Make = Callable[[int, tp.sim.Random], tp.Workload]
guaranteed, demand = tp.TopologyRequirement.guaranteed, tp.ResourceSchema.standard().make

def serving(i: int, r: tp.sim.Random) -> tp.Workload:  # one GPU per NUMA node, or two per socket
    gpus, scope = (1, "numa") if r.uniform_below(10) < 7 else (2, "socket")
    return tp.Workload(i, priority=100, preemptible=False, whole_devices=gpus, replica_scope=guaranteed(scope),
                       resources=demand({"cpu_milli": 8000 * gpus, "memory_mib": 32768 * gpus}))

def batch_gpu(i: int, r: tp.sim.Random) -> tp.Workload:
    priority, pick = r.uniform_below(4), r.uniform_below(10)
    gpus = 1 if pick < 4 else 2 if pick < 7 else 4 if pick < 9 else 8
    cpu = 1000 * (2 + r.uniform_below(3)) * gpus
    return tp.Workload(i, priority=priority, whole_devices=gpus, resources=demand({"cpu_milli": cpu, "memory_mib": 16384 * gpus}))

def batch_cpu(i: int, r: tp.sim.Random) -> tp.Workload:
    priority = r.uniform_below(4)
    return tp.Workload(i, priority=priority, resources=demand({"cpu_milli": 1000 * (4 + r.uniform_below(9)), "memory_mib": 8192}))

def make_trace(nodes: int, days: float, seed: int = 1) -> list[tp.sim.TraceJob]:
    r, ids = tp.sim.Random(seed), iter(range(1, 1 << 62))
    trace: list[tp.sim.TraceJob] = []
    serving_mean = 0.25 * 8 / 1.3 * nodes / HOUR
    streams: list[tuple[float, Callable[[float], float], Make, float, float, float]] = [
        (0.8 * 8 / 7.8 * nodes / HOUR, lambda t: 0.8 * 8 / 7.8 * nodes / HOUR, batch_gpu, 3 * HOUR, 1800.0, 120.0),
        (30 / 16 * nodes / HOUR, lambda t: 30 / 16 * nodes / HOUR, batch_cpu, 2 * HOUR, 1800.0, 60.0),
        (serving_mean * 1.8, lambda t: serving_mean * (1 + 0.8 * math.sin(2 * math.pi * t / DAY - math.pi / 2)),
         serving, HOUR, 0.0, 0.0)]
    for peak, rate, make, mean, checkpoint, restart in streams:  # Poisson arrivals by thinning
        t = r.exponential(1 / peak)
        while t < days * DAY:
            if r.uniform01() * peak <= rate(t):
                duration = 600.0 + r.exponential(mean)
                trace.append(tp.sim.TraceJob(make(next(ids), r), t, duration, checkpoint_interval_s=checkpoint, restart_delay_s=restart))
            t += r.exponential(1 / peak)
    return trace

nodes, days = int(sys.argv[1]) if len(sys.argv) > 1 else 41, float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), nodes, 8)
trace = make_trace(nodes, days)
rates: dict[str, float] = {}
for solver in (tp.kube_default, tp.branch_and_bound):
    m = tp.sim.simulate(topology, trace, solver, tp.PriorityWeighted(offset=1.0), min_preemptor_priority=100,
                        wasted_preemptor=tp.sim.WastedPreemptor.start_without_topology, horizon_s=days * DAY,
                        record_allocation=False)
    rates[solver.name] = 100 * m.hit_rate()
    print(f"{solver.name}: {m.preemptions} preemptions, hit rate {rates[solver.name]:.1f}%, {m.victims} victims")
plt.bar(list(rates), list(rates.values()), color=["tab:red", "tab:green"])
plt.ylabel("topology hit rate (%)")
plt.title(f"Experiment A: {nodes} servers, {days:g} day(s), {len(trace)} jobs")
plt.savefig(sys.argv[3] if len(sys.argv) > 3 else "experiment_a.png", dpi=100)
