# SPDX-License-Identifier: MIT
"""The model in Python terms: NumPy vectors, typed errors with the library's messages, and bad
input that leaves the state unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import topopreempt as tp

from conftest import small_cluster


def test_version_is_the_projects() -> None:
    from pathlib import Path
    import re
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    version = re.search(r"project\(\s*topopreempt\s+VERSION\s+([0-9.]+)", cmake)
    assert version is not None and tp.__version__ == version.group(1)


def test_capacities_are_numpy_int64() -> None:
    topology = tp.shapes.single_machine(tp.shapes.hgx_h100())
    capacity = topology.capacity(tp.Topology.root())
    assert isinstance(capacity, np.ndarray) and capacity.dtype == np.int64
    assert topology.schema.names() == ["gpu_milli", "gpu_memory_mib", "cpu_milli", "memory_mib"]
    assert capacity[0] == 8 * 1000  # 8 GPUs of 1000 milli each
    assert topology.capacities().shape == (4, len(topology))
    assert topology.levels == ["cluster", "node", "socket", "numa", "pcie_switch", "gpu"]


def test_builder_and_topology_navigation() -> None:
    schema = tp.ResourceSchema.standard()
    builder = tp.TopologyBuilder(["cluster", "node", "gpu"], schema, "gpu", "node")
    node = builder.add(tp.TopologyBuilder.root(), "node", "n0", schema.make({"cpu_milli": 8000}))
    for g in range(2):
        builder.add(node, "gpu", f"g{g}", schema.make({"gpu_milli": 1000, "gpu_memory_mib": 1024}))
    topology = builder.build()
    assert len(topology) == 4
    assert topology.find("n0/g1") == 3
    assert topology.find("n0/g9") is None
    assert topology.children(1) == [2, 3]
    assert topology.path(3) == "n0/g1"
    assert topology.parent(0) is None
    np.testing.assert_array_equal(topology.capacity(1), [2000, 2048, 8000, 0])


def test_builder_errors_name_the_domain_and_change_nothing() -> None:
    schema = tp.ResourceSchema.standard()
    builder = tp.TopologyBuilder(["cluster", "node", "gpu"], schema, "gpu", "node")
    node = builder.add(0, "node", "n0")
    with pytest.raises(ValueError, match="'n0' \\(node\\) already exists under 'root'"):
        builder.add(0, "node", "n0")
    with pytest.raises(ValueError, match="unknown"):
        builder.add(node, "rack", "r0")
    assert len(builder) == 2
    with pytest.raises(ValueError, match="negative"):
        schema.make({"cpu_milli": -1})
    with pytest.raises(ValueError, match="unknown resource dimension 'gpus'"):
        schema.make({"gpus": 1})


def test_wrong_types_are_type_errors() -> None:
    state, preemptor = small_cluster()
    with pytest.raises(TypeError):
        tp.branch_and_bound.solve(state, "not a workload", tp.VictimCount())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tp.branch_and_bound.solve(state, preemptor, "victim_count")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tp.Workload("seven")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tp.Allocation(42)  # type: ignore[arg-type]


def test_bad_add_is_a_value_error_and_leaves_the_state_unchanged() -> None:
    state, _ = small_cluster()
    topology = state.topology
    before = (len(state), state.domain_version(0), state.free(0).tolist())
    gpu0 = topology.domains_at(topology.level_index("gpu"))[0]
    # GPU 0 is taken: over capacity, named.
    intruder = tp.Workload(5000, name="intruder", whole_devices=1)
    with pytest.raises(ValueError, match="workload 5000 'intruder'"):
        state.add(intruder, tp.Placement([tp.ReplicaPlacement([tp.PlacementEntry(gpu0, topology.local_capacity(gpu0))])]))
    # A duplicate id.
    with pytest.raises(ValueError, match="workload 1"):
        state.add(tp.Workload(1, whole_devices=1), tp.Placement([tp.ReplicaPlacement([])]))
    # A level the topology lacks.
    with pytest.raises(ValueError, match="replica scope"):
        state.add(tp.Workload(5001, whole_devices=1, replica_scope=tp.TopologyRequirement.guaranteed("nvlink")),
                  tp.Placement([tp.ReplicaPlacement([])]))
    # Unknown ids and domains: ValueError with the library's message.
    with pytest.raises(ValueError, match="5002"):
        state.remove(5002)
    with pytest.raises(ValueError, match="domain id 99999"):
        state.free(99999)
    with pytest.raises(ValueError, match="min_replicas"):
        tp.branch_and_bound.solve(state, tp.Workload(6000, replicas=2, min_replicas=3, whole_devices=1),
                                  tp.VictimCount())
    assert (len(state), state.domain_version(0), state.free(0).tolist()) == before


def test_add_remove_shrink_find_placement_memory() -> None:
    topology = tp.shapes.cluster(tp.shapes.dense_8gpu_server(), 2, 2)
    state = tp.Allocation(topology)
    elastic = tp.Workload(1, priority=1, replicas=4, min_replicas=2, whole_devices=1,
                          replica_scope=tp.TopologyRequirement.guaranteed("numa"))
    found = state.find_placement(elastic)
    assert found and found.gang_domain is not None
    state.add(elastic, found.placement)
    assert 1 in state and len(state.placement(1).replicas) == 4
    assert state.idle_devices(0) == 16 - 4
    state.shrink(1, [0, 3])
    assert state.workload(1).replicas == 2 and state.idle_devices(0) == 14
    with pytest.raises(ValueError, match=r"workload 1: cannot shrink from 2 to 1 replicas \(minimum 2\)"):
        state.shrink(1, [0])
    assert state.memory_bytes() > 0
    copy = state.copy()
    state.remove(1)
    assert len(state) == 0 and len(copy) == 1
    with pytest.raises(ValueError, match="workload 1"):
        state.remove(1)


def test_docstrings_come_from_the_library() -> None:
    assert "depth-first pre-order" in (tp.Topology.__doc__ or "")
    assert "fractional" in (tp.BranchAndBoundSolver.__doc__ or "")
    assert "Releases the GIL" in (tp.Solver.solve.__doc__ or "")
    assert "gang of `replicas` identical replicas" in (tp.Workload.__doc__ or "")
    assert "ValueError (state unchanged)" in (tp.Allocation.add.__doc__ or "")


def test_snapshot_errors_carry_the_json_path() -> None:
    from conftest import ROOT
    with pytest.raises(tp.SnapshotError) as caught:
        tp.load_snapshot(str(ROOT / "examples/snapshots/invalid/bad-domain-path.json"))
    assert isinstance(caught.value, ValueError)
    assert caught.value.path.startswith("$.workloads[")  # type: ignore[attr-defined]
    with pytest.raises(tp.SnapshotError, match=r"^\$: invalid JSON"):
        tp.load_snapshot_text("{")


def test_workload_keywords_reach_the_placement() -> None:
    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 4, 2)  # 2 racks of 2 servers
    state = tp.Allocation(topology)
    node, rack = topology.level_index("node"), topology.level_index("rack")
    spread = tp.Workload(1, replicas=2, whole_devices=1, distinct_hosts=True,
                         gang_scope=tp.TopologyRequirement.guaranteed("rack"),
                         cost=tp.CostInputs(model_size_gib=14.0, seconds_since_checkpoint=30.0))
    found = state.find_placement(spread)
    assert found and topology.level(found.gang_domain) == rack
    hosts = {next(a for a in [d] + ancestors(topology, d) if topology.level(a) == node)
             for d in found.placement.devices(topology)}
    assert len(hosts) == 2, "distinct_hosts put both replicas on one host"
    state.add(spread, found.placement)
    assert state.workload(1).distinct_hosts and state.workload(1).cost.model_size_gib == 14.0
    assert tp.ReloadTime(bandwidth_gib_per_s=7.0, floor=0.0).evict(state.workload(1)) == 4.0


def ancestors(topology: tp.Topology, domain: int) -> list[int]:
    parent = topology.parent(domain)
    return [] if parent is None else [parent] + ancestors(topology, parent)


def test_every_machine_shape_and_the_generator() -> None:
    for shape in (tp.shapes.rtx4090_server(), tp.shapes.hgx_h100(), tp.shapes.dense_8gpu_server(),
                  tp.shapes.gb200_nvl72_rack(), tp.shapes.openb_node("V100M32", 8, 96000, 368640)):
        topology = tp.shapes.single_machine(shape)
        assert topology.levels[topology.host_level] == "node" and topology.device_count(0) >= 8, shape.model
    first, again = (tp.generate_cluster(tp.ClusterSpec(nodes=8, seed=5)) for _ in range(2))
    assert first.workload_ids() == again.workload_ids() and len(first) > 0
    preemptor = tp.make_preemptor(tp.PreemptorKind.node, 8)
    assert tp.branch_and_bound.solve(first, preemptor, tp.LostWork()) == \
        tp.branch_and_bound.solve(again, preemptor, tp.LostWork())


def test_help_shows_the_library_docs() -> None:
    import pydoc
    text = pydoc.render_doc(tp.WeightedSum, renderer=pydoc.plaintext)
    assert "cost::weighted_sum" in text and "first_weight" in text
    assert "GIL" in pydoc.render_doc(tp.sim.simulate, renderer=pydoc.plaintext)
