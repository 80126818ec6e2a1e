# SPDX-License-Identifier: MIT
"""Every example snapshot solved through Python by every solver gives the CLI's plan: the same
status, victims (ids and actions) and cost, bit for bit."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

import topopreempt as tp

from conftest import SNAPSHOTS

SOLVER_NAMES = ["greedy", "knapsack", "branch_and_bound", "kube_default", "exhaustive_subsets"]


def solvers_as_the_cli_runs_them(snapshot: tp.Snapshot) -> dict[str, tp.Solver]:
    """Every solver, with the snapshot's limits applied where a solver supports them."""
    time_limit = snapshot.solver_time_limit_ms
    node_limit = snapshot.solver_node_limit
    bnb = tp.BranchAndBoundSolver(time_limit_ms=None if time_limit is None else float(time_limit),
                                  **({} if node_limit is None else {"node_limit": node_limit}))
    subsets = tp.ExhaustiveSubsetsSolver(time_limit_ms=None if time_limit is None else float(time_limit),
                                         node_limit=node_limit)
    return {"greedy": tp.greedy, "knapsack": tp.knapsack, "branch_and_bound": bnb,
            "kube_default": tp.kube_default, "exhaustive_subsets": subsets}


def cli_results(whatif: Path, snapshot: Path) -> dict[str, Any]:
    """The CLI's JSON for every solver, keyed by solver name (exit 0, or 1 when infeasible)."""
    run = subprocess.run([str(whatif), str(snapshot), "--solver", "all", "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    document = json.loads(run.stdout)
    return {item["solver"]: item for item in document["results"]}


def test_every_snapshot_is_found() -> None:
    assert len(SNAPSHOTS) >= 4, SNAPSHOTS


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=lambda p: p.stem)
def test_python_plans_equal_the_cli(whatif: Path, snapshot: Path) -> None:
    expected = cli_results(whatif, snapshot)
    loaded = tp.load_snapshot(str(snapshot))
    # The CLI's default cost model, unless the snapshot names one.
    model = loaded.cost_model if loaded.cost_model is not None else tp.PriorityWeighted()
    assert set(expected) == set(SOLVER_NAMES)
    for name, solver in solvers_as_the_cli_runs_them(loaded).items():
        plan = solver.solve(loaded.state, loaded.preemptor, model)
        cli = expected[name]["plan"]
        assert str(plan.status) == cli["status"], name
        assert [(v.id, v.action.name) for v in plan.victims] == \
            [(v["id"], v["action"]) for v in cli["victims"]], name
        if cli["cost"] is None:  # JSON has no NaN or infinity
            assert not math.isfinite(plan.cost), name
        else:
            assert plan.cost == cli["cost"], name
        # The whole plan document, timing aside, is the CLI's too.
        ours = json.loads(tp.plan_to_json(plan, loaded.state))
        ours["statistics"].pop("seconds")
        cli.get("statistics", {}).pop("seconds", None)
        assert ours == cli, name
        # And the verifier agrees with the CLI's verification.
        verdict = tp.verify_plan(loaded.state, loaded.preemptor, plan, model,
                                 require_topology=not (solver.is_baseline and not plan.topology_satisfied))
        assert verdict.ok == expected[name]["verification"]["ok"], (name, verdict.summary())
