# SPDX-License-Identifier: MIT
"""The simulator through Python gives the C++ example's numbers for the same trace and seed
(examples/simulate_trace.cpp), and its metrics go straight into pandas."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import topopreempt as tp

from conftest import ROOT

TRACE = ROOT / "examples" / "traces" / "sample.csv"


def run(solver: tp.Solver) -> tp.sim.SimulationMetrics:
    """examples/simulate_trace.cpp's run, option for option."""
    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 4, 4)
    trace = tp.sim.load_trace_csv(str(TRACE), topology)
    return tp.sim.simulate(topology, trace, solver, tp.PriorityWeighted(offset=1.0),
                           verify_plans=True, min_preemptor_priority=100, seed=42)


def report(m: tp.sim.SimulationMetrics) -> str:
    """The example's report, printed as C++'s default ostream prints doubles (%g)."""
    text = (f"{m.solver}: {m.preemptions} preemptions, hit rate {100.0 * m.hit_rate():g}%, "
            f"{m.victims} victims (cost {m.victim_cost:g}), {m.gpu_hours_lost:g} GPU-hours lost, "
            f"mean JCT {m.mean_jct_s:g} s, mean allocation {100.0 * m.mean_allocation_ratio:g}%, "
            f"plans rejected by the verifier {m.plans_rejected}\n")
    serving = [w for w in m.waits if w["priority"] == 100]
    if serving:
        text += f"  serving wait p50 {serving[0]['p50_s']:g} s, p99 {serving[0]['p99_s']:g} s\n"
    return text


def test_simulation_equals_the_cpp_example(simulate_trace_example: Path) -> None:
    exact, kube = run(tp.branch_and_bound), run(tp.kube_default)
    cpp = subprocess.run([str(simulate_trace_example), str(TRACE)], capture_output=True, text=True,
                         timeout=600)
    assert cpp.returncode == 0, cpp.stderr
    assert report(exact) + report(kube) == cpp.stdout


def test_simulation_is_deterministic_and_sound() -> None:
    first, second = run(tp.branch_and_bound), run(tp.branch_and_bound)
    assert first.digest() == second.digest()
    assert first.preemptions > 0 and first.hit_rate() == 1.0 and first.plans_rejected == 0
    assert first.solver == "branch_and_bound" and first.cost_model == "priority_weighted"
    assert first.placement_policy == "find_placement"


def test_metrics_are_plain_values_pandas_takes() -> None:
    pandas = pytest.importorskip("pandas")
    runs = [run(tp.branch_and_bound), run(tp.kube_default)]
    table = pandas.DataFrame([m.as_dict() for m in runs])
    assert list(table["solver"]) == ["branch_and_bound", "kube_default"]
    assert table.loc[0, "preemptions"] == runs[0].preemptions
    allocation = pandas.DataFrame(runs[0].allocation)
    assert list(allocation.columns) == ["time_s", "arrived_gpu_ratio", "allocated_gpu_ratio"]
    assert len(allocation) > 0
    waits = pandas.DataFrame(runs[0].waits)
    assert "p99_s" in waits.columns


def test_random_matches_the_portable_draws() -> None:
    a, b = tp.sim.Random(7), tp.sim.Random(7)
    draws = [a.uniform01() for _ in range(5)]
    assert draws == [b.uniform01() for _ in range(5)]
    assert all(0.0 <= d < 1.0 for d in draws)
    with pytest.raises(ValueError, match="bound must be positive"):
        a.uniform_below(0)


def test_bad_trace_is_a_value_error(tmp_path: Path) -> None:
    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 1, 1)
    bad = tmp_path / "bad.csv"
    lines = TRACE.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("id,"))
    bad.write_text("\n".join(lines[: header + 1] + ["1,x,0,0,1,1,1,,1,0,0,0,none,none,0,0"]) + "\n")
    with pytest.raises(ValueError, match="duration_s"):
        tp.sim.load_trace_csv(str(bad), topology)
    job = tp.sim.TraceJob(tp.Workload(1, whole_devices=1), 0.0, -1.0)
    with pytest.raises(ValueError, match="duration_s"):
        tp.sim.simulate(topology, [job], tp.greedy, tp.VictimCount())
