# SPDX-License-Identifier: MIT
"""Watching and steering a simulation from Python: examples/traces/sample.csv on 16 paper
servers, once as is and once with a controller that cordons one server (holds it idle) for a
maintenance window, evicting what runs there first. A progress callable reports the run as it
goes. Prices: lost work plus a fixed price per victim (a WeightedSum of two built-in models).
Usage: python maintenance_window.py [trace=examples/traces/sample.csv] [window_end_s=7200]"""
import sys
from pathlib import Path

import topopreempt as tp

TRACE = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parents[1] / "traces" / "sample.csv")
WINDOW_END = float(sys.argv[2]) if len(sys.argv) > 2 else 7200.0
topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 16, 4)
server = topology.find("rack0/node0")
assert server is not None
SERVER: int = server
HOLD = tp.Workload(1 << 40, name="maintenance", preemptible=False, whole_devices=8,
                   resources=topology.schema.make({"cpu_milli": 48000}))


def cordon(control: tp.sim.ClusterControl) -> None:
    """Evicts what runs on SERVER and holds all of it until WINDOW_END; then gives it back."""
    state = control.state()  # a copy, as the run stands at this call
    if HOLD.id in state:
        if control.now >= WINDOW_END:
            control.release(HOLD.id)
        return
    if control.now >= WINDOW_END:
        return
    on_server = range(SERVER, topology.subtree_end(SERVER))
    for job in control.running():
        if any(device in on_server for device in state.placement(job.id).devices(topology)):
            control.evict(job.id)
    found = control.state().find_placement(HOLD, SERVER)
    assert found, "the server is not empty after the evictions"
    control.reserve(HOLD, found.placement, tp.sim.HeldCapacity.idle)


def report(where: tp.sim.SimulationProgress) -> None:
    print(f"  t={where.now_s:8.0f} s: {where.events} events, {where.jobs_finished}/{where.jobs} jobs done")


model = tp.WeightedSum(tp.LostWork(floor=0.0), tp.VictimCount(), second_weight=600.0)
for name, controller in (("as is", None), ("maintenance", cordon)):
    print(f"{name}:")
    trace = tp.sim.load_trace_csv(TRACE, topology)
    m = tp.sim.simulate(topology, trace, tp.branch_and_bound, model, verify_plans=True, seed=42,
                        progress=report, progress_every=100, controller=controller, control_interval_s=600.0)
    print(f"  mean JCT {m.mean_jct_s:.0f} s, mean queue {m.mean_queue_s:.0f} s, {m.evictions} evictions "
          f"({m.preemptions} preemptions), {m.control_calls} controller calls, "
          f"allocation {100 * m.mean_allocation_ratio:.1f}%")
