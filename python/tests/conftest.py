# SPDX-License-Identifier: MIT
"""Shared fixtures: the repository root, the example snapshots and the C++ programs the tests
compare against (found in a CMake build tree, or named by environment variables)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import topopreempt as tp

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted((ROOT / "examples" / "snapshots").glob("*.json"))


def find_program(variable: str, name: str) -> Path | None:
    """The program named by $variable, else the newest build/*/.../name of the repository."""
    if os.environ.get(variable):
        path = Path(os.environ[variable])
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = [p for p in (ROOT / "build").glob(f"*/**/{name}") if p.is_file() and os.access(p, os.X_OK)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def missing(message: str) -> None:
    """Skips, or fails where CI says the C++ programs must be there."""
    if os.environ.get("TOPOPREEMPT_REQUIRE_CPP_PROGRAMS") == "1":
        pytest.fail(message + " (TOPOPREEMPT_REQUIRE_CPP_PROGRAMS=1)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def whatif() -> Path:
    program = find_program("TOPOPREEMPT_WHATIF", "topopreempt-whatif")
    if program is None:
        missing("the CLI topopreempt-whatif is not built (cmake --build <tree> --target "
                "topopreempt-whatif, or set TOPOPREEMPT_WHATIF): the cross-check is skipped")
    assert program is not None
    return program


@pytest.fixture(scope="session")
def simulate_trace_example() -> Path:
    program = find_program("TOPOPREEMPT_SIMULATE_TRACE", "topopreempt_simulate_trace")
    if program is None:
        missing("the C++ example topopreempt_simulate_trace is not built (target "
                "topopreempt_simulate_trace, or set TOPOPREEMPT_SIMULATE_TRACE)")
    assert program is not None
    return program


def small_cluster() -> tuple[tp.Allocation, tp.Workload]:
    """Two paper servers, every GPU busy with a 1-GPU workload of priority 1..16; the preemptor
    wants 2 GPUs of one socket."""
    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 2, 2)
    state = tp.Allocation(topology)
    schema = topology.schema
    gpu_level = topology.level_index("gpu")
    for index, gpu in enumerate(topology.domains_at(gpu_level)):
        workload = tp.Workload(
            index + 1, name=f"infer-{index}", priority=index % 16 + 1, whole_devices=1,
            cost=tp.CostInputs(seconds_since_checkpoint=60.0 * (index + 1)))
        state.add(workload, tp.Placement([tp.ReplicaPlacement([
            tp.PlacementEntry(gpu, topology.local_capacity(gpu))])]))
    preemptor = tp.Workload(
        1000, name="tp-pair", priority=100, whole_devices=2,
        resources=schema.make({"cpu_milli": 4000}),
        replica_scope=tp.TopologyRequirement.guaranteed("socket"))
    return state, preemptor
