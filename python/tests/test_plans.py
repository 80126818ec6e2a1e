# SPDX-License-Identifier: MIT
"""Solvers, cost models, plans and what is done with them: verify_plan, commit, plan_queue,
IncrementalDecider, a cost model written in Python, snapshot round trips, threaded solves."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import topopreempt as tp

from conftest import SNAPSHOTS, small_cluster

ALL_SOLVERS = [tp.greedy, tp.knapsack, tp.branch_and_bound, tp.kube_default, tp.exhaustive_subsets]


def test_plan_fields() -> None:
    state, preemptor = small_cluster()
    plan = tp.branch_and_bound.solve(state, preemptor, tp.PriorityWeighted(offset=1.0))
    assert plan.status == tp.PlanStatus.optimal and str(plan.status) == "optimal"
    assert plan.solver == "branch_and_bound" and plan.preemptor == 1000
    assert len(plan.victims) == 2 and all(v.action == tp.VictimAction.evict for v in plan.victims)
    assert plan.cost == sum(v.cost for v in plan.victims) == plan.lower_bound
    assert plan.gap() == 0.0 and plan.has_victims_plan()
    assert plan.target_domain is not None
    assert state.topology.level(plan.target_domain) == state.topology.level_index("socket")
    assert len(plan.placement.devices(state.topology)) == 2
    assert plan.statistics.as_dict()["domains_considered"] >= 1
    assert plan.explanation and plan.dependencies
    assert tp.verify_plan(state, preemptor, plan, tp.PriorityWeighted(offset=1.0)).ok


def test_every_builtin_cost_model_with_its_parameters() -> None:
    state, preemptor = small_cluster()
    victim = state.workload(1)
    assert tp.VictimCount().evict(victim) == 1.0
    assert tp.PriorityWeighted(offset=10.0).evict(victim) == 10.0 + victim.priority
    assert tp.LostWork(floor=2.0).evict(victim) == 2.0 + 60.0  # 1 GPU x 60 s since checkpoint
    reload = tp.ReloadTime(bandwidth_gib_per_s=4.0, floor=0.5)
    assert reload.bandwidth_gib_per_s == 4.0 and reload.evict(victim) == 0.5
    order = tp.KubernetesOrder.of(state)
    assert order.evict(victim) >= 1.0 and order.name == "kubernetes_order"
    with pytest.raises(ValueError, match="base"):
        tp.KubernetesOrder([1, 2], base=1.5)
    for model in (tp.VictimCount(), tp.PriorityWeighted(), tp.LostWork(), tp.ReloadTime(), order,
                  tp.ShrinkElasticFirst(), tp.WeightedSum(tp.LostWork(), tp.VictimCount())):
        plan = tp.branch_and_bound.solve(state, preemptor, model)
        assert plan.status == tp.PlanStatus.optimal, model.name
        assert tp.verify_plan(state, preemptor, plan, model).ok


def test_weighted_sum_of_any_two_models() -> None:
    state, preemptor = small_cluster()
    victim = state.workload(3)
    lost, count = tp.LostWork(floor=2.0), tp.VictimCount()
    total = tp.WeightedSum(lost, count, first_weight=0.5, second_weight=3.0)
    assert total.name == "weighted_sum" and total.first is lost and total.second is count
    assert (total.first_weight, total.second_weight) == (0.5, 3.0)
    assert total.evict(victim) == 0.5 * lost.evict(victim) + 3.0
    nested = tp.WeightedSum(total, tp.PriorityWeighted(offset=1.0), second_weight=2.0)
    assert nested.evict(victim) == total.evict(victim) + 2.0 * (1.0 + victim.priority)
    with pytest.raises(ValueError, match="first_weight"):
        tp.WeightedSum(lost, count, first_weight=-1.0)
    with pytest.raises(ValueError, match="second_weight"):
        tp.WeightedSum(lost, count, second_weight=float("nan"))
    with pytest.raises(TypeError):
        tp.WeightedSum(lost, "victim_count")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weighted_sum.*snapshot"):
        tp.Snapshot(state, preemptor, cost_model=total)

    # The same prices from Python: every exact solver proves the same optimum, and every
    # solver's plan verifies under the sum (a part that declares no bound included).
    for model in (total, nested, tp.WeightedSum(tp.ShrinkElasticFirst(), tp.ReloadTime(floor=0.25)),
                  tp.WeightedSum(tp.CallableCostModel(lambda v: float(v.priority)), count)):
        by_hand = tp.CallableCostModel(model.evict, model.shrink)
        for solver in ALL_SOLVERS:
            plan = solver.solve(state, preemptor, model)
            assert plan.has_victims_plan(), (model.name, solver.name)
            assert tp.verify_plan(state, preemptor, plan, model,
                                  require_topology=solver.name != "kube_default").ok, solver.name
            if solver.is_exact:
                reference = solver.solve(state, preemptor, by_hand)
                assert plan.status == reference.status == tp.PlanStatus.optimal, solver.name
                assert plan.cost == pytest.approx(reference.cost, rel=1e-12), solver.name


def test_shrink_elastic_first_shrinks_before_it_evicts() -> None:
    topology = tp.shapes.single_machine(tp.shapes.rtx4090_server())
    state = tp.Allocation(topology)
    jobs = [tp.Workload(1, priority=1, replicas=4, min_replicas=2, whole_devices=1)] + \
        [tp.Workload(i, priority=1, whole_devices=1) for i in range(2, 6)]
    for job in jobs:
        state.add(job, state.find_placement(job).placement)
    model = tp.ShrinkElasticFirst(shrink_weight=1.5, evict_weight=10.0)
    assert (model.shrink_weight, model.evict_weight, model.name) == (1.5, 10.0, "shrink_elastic_first")
    assert model.evict(jobs[0]) == 40.0 and model.shrink(jobs[0], 2) == 3.0
    preemptor = tp.Workload(100, priority=10, replicas=2, whole_devices=1)
    for solver in (tp.greedy, tp.knapsack, tp.branch_and_bound):
        plan = solver.solve(state, preemptor, model)
        assert [(v.id, v.action, len(v.dropped_replicas)) for v in plan.victims] == \
            [(1, tp.VictimAction.shrink, 2)], solver.name
        assert plan.cost == 3.0 and tp.verify_plan(state, preemptor, plan, model).ok
    with pytest.raises(ValueError, match="evict_weight"):
        tp.ShrinkElasticFirst(evict_weight=float("inf"))


def test_cache_aware_reload_prices_against_the_model_cache() -> None:
    topology = tp.shapes.single_machine(tp.shapes.rtx4090_server())
    state = tp.Allocation(topology)
    jobs = [tp.Workload(i, priority=1, whole_devices=1,
                        cost=tp.CostInputs(model_id=f"model-{i % 2}", model_size_gib=12.0)) for i in range(1, 9)]
    for job in jobs:
        state.add(job, state.find_placement(job).placement)
    cache = tp.ModelCache(topology, load_bandwidth_mib_per_s=1024.0)
    gpu_of = {job.id: state.placement(job.id).devices(topology)[0] for job in jobs}
    cache.insert(gpu_of[1], "model-1", 12 * 1024)  # model-1 also on job 3's GPU: cheap to evict 1
    cache.insert(gpu_of[3], "model-1", 12 * 1024)
    cache.insert(gpu_of[2], "model-0", 12 * 1024)  # model-0 only where job 2 runs
    assert cache.devices_caching("model-1") == sorted([gpu_of[1], gpu_of[3]])
    assert cache.model_size("model-0") == 12 * 1024 and cache.model_size("none") is None
    with pytest.raises(ValueError, match="already cached"):
        cache.insert(gpu_of[1], "model-1", 12 * 1024)
    with pytest.raises(ValueError, match="not a device"):
        cache.is_cached(0, "model-1")

    model = tp.CacheAwareReload(cache, state, cached_elsewhere_cost=0.5)
    assert model.name == "cache_aware_reload" and model.cached_elsewhere_cost == 0.5
    assert model.evict(jobs[0]) == 0.5            # job 1: model-1 stays cached on job 3's GPU
    assert model.evict(jobs[1]) == 0.5 + 12.0     # job 2: model-0 cached only under itself
    assert model.evict(jobs[3]) == 0.5            # job 4: model-0 stays cached on job 2's GPU
    cache.erase(gpu_of[3], "model-1")             # the model keeps the copy it was made with
    assert model.evict(jobs[0]) == 0.5
    assert tp.CacheAwareReload(cache, state, cached_elsewhere_cost=0.5).evict(jobs[0]) == 0.5 + 12.0
    with pytest.raises(ValueError, match="same topology"):
        tp.CacheAwareReload(cache, tp.Allocation(tp.shapes.single_machine(tp.shapes.rtx4090_server())))

    preemptor = tp.Workload(100, priority=10, whole_devices=1)
    by_hand = tp.CallableCostModel(model.evict, model.shrink)
    for solver in (tp.greedy, tp.knapsack, tp.branch_and_bound):
        plan = solver.solve(state, preemptor, model)
        assert plan.cost == 0.5 and tp.verify_plan(state, preemptor, plan, model).ok, solver.name
        assert plan.victim_ids() == solver.solve(state, preemptor, by_hand).victim_ids(), solver.name


def test_a_cost_model_written_in_python_matches_the_builtin_one() -> None:
    state, preemptor = small_cluster()
    calls = []

    def evict(victim: tp.Workload) -> float:
        calls.append(victim.id)
        return 1.0 + victim.priority

    python_model = tp.CallableCostModel(evict)
    builtin = tp.PriorityWeighted(offset=1.0)
    for solver in ALL_SOLVERS:
        ours = solver.solve(state, preemptor, python_model)
        theirs = solver.solve(state, preemptor, builtin)
        assert ours.cost == theirs.cost and ours.victim_ids() == theirs.victim_ids(), solver.name
        # The built-in model declares price bounds, with which even greedy may prove its plan
        # optimal; the Python one declares none, so only the exact solvers prove theirs.
        if solver.is_exact:
            assert ours.status == theirs.status == tp.PlanStatus.optimal, solver.name
        else:
            assert ours.status in (theirs.status, tp.PlanStatus.feasible), solver.name
    assert calls, "the Python model was never asked"


def test_python_cost_model_errors() -> None:
    state, preemptor = small_cluster()
    with pytest.raises(ValueError, match="workload"):
        tp.branch_and_bound.solve(state, preemptor, tp.CallableCostModel(lambda victim: -1.0))
    with pytest.raises(TypeError, match="must return a float"):
        tp.branch_and_bound.solve(state, preemptor, tp.CallableCostModel(lambda victim: "cheap"))

    def broken(victim: tp.Workload) -> float:
        raise RuntimeError("pricing service down")

    with pytest.raises(RuntimeError, match="pricing service down"):
        tp.branch_and_bound.solve(state, preemptor, tp.CallableCostModel(broken))


def test_commit_then_a_stale_plan_conflicts() -> None:
    state, preemptor = small_cluster()
    model = tp.VictimCount()
    plan = tp.branch_and_bound.solve(state, preemptor, model)
    stale = state.copy()
    result = tp.commit(state, plan, preemptor)
    assert result.committed and preemptor.id in state
    for victim in plan.victims:
        assert victim.id not in state
    # The same plan on the copy still applies there, but not once that copy moved.
    stale.remove(plan.victims[0].id)
    conflict = tp.commit(stale, plan, preemptor)
    assert not conflict and conflict.moved
    assert preemptor.id not in stale


def test_plan_queue_and_nominations() -> None:
    state, first = small_cluster()
    second = tp.Workload(1001, priority=90, whole_devices=1,
                         replica_scope=tp.TopologyRequirement.guaranteed("numa"))
    nominations = tp.Nominations()
    result = tp.plan_queue(state, [second, first], tp.branch_and_bound, tp.VictimCount(), nominations)
    assert [p.preemptor for p in result.plans] == [1000, 1001]  # priority order
    assert result.count(tp.NominationStatus.planned) == 2 and len(nominations) == 2
    again = tp.plan_queue(state, [second, first], tp.branch_and_bound, tp.VictimCount(), nominations)
    assert again.count(tp.NominationStatus.kept) == 2
    bad = tp.Workload(1002, priority=90, whole_devices=1,
                      replica_scope=tp.TopologyRequirement.guaranteed("rack-row"))
    mixed = tp.plan_queue(state, [bad, first], tp.branch_and_bound, tp.VictimCount())
    assert mixed.count(tp.NominationStatus.rejected) == 1
    assert "rack-row" in [p for p in mixed.plans if p.preemptor == 1002][0].error


def test_incremental_decider_returns_the_cold_plan() -> None:
    state, preemptor = small_cluster()
    model = tp.LostWork()
    decider = tp.IncrementalDecider(tp.branch_and_bound, model, preemptor)
    assert decider.decide(state) == tp.branch_and_bound.solve(state, preemptor, model)
    state.remove(state.workload_ids()[0])
    assert decider.decide(state) == tp.branch_and_bound.solve(state, preemptor, model)
    assert decider.reused_reads > 0
    with pytest.raises(ValueError, match="no incremental form"):
        tp.IncrementalDecider(tp.kube_default, model, preemptor)


def test_solver_options() -> None:
    state, preemptor = small_cluster()
    limited = tp.BranchAndBoundSolver(node_limit=1)
    assert limited.node_limit == 1 and limited.time_limit_ms is None
    plan = limited.solve(state, preemptor, tp.VictimCount())
    assert plan.status in (tp.PlanStatus.optimal, tp.PlanStatus.feasible)
    assert tp.KnapsackSolver(max_cells=1024).max_cells == 1024
    paper = tp.ExhaustiveSubsetsSolver(ranking=tp.SubsetRanking.paper_score, alpha=0.5)
    assert paper.alpha == 0.5 and paper.solve(state, preemptor, tp.VictimCount()).has_victims_plan()
    with pytest.raises(ValueError, match="alpha"):
        tp.ExhaustiveSubsetsSolver(alpha=2.0)
    with pytest.raises(ValueError, match="time_limit_ms"):
        tp.BranchAndBoundSolver(time_limit_ms=-1.0)


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=lambda p: p.stem)
def test_snapshot_round_trip(snapshot: object, tmp_path: object) -> None:
    loaded = tp.load_snapshot(str(snapshot))
    text = loaded.to_json()
    again = tp.load_snapshot_text(text)
    assert again.to_json() == text
    model = loaded.cost_model if loaded.cost_model is not None else tp.VictimCount()
    assert tp.branch_and_bound.solve(again.state, again.preemptor, model).victim_ids() == \
        tp.branch_and_bound.solve(loaded.state, loaded.preemptor, model).victim_ids()
    rebuilt = tp.Snapshot(loaded.state, loaded.preemptor, description=loaded.description,
                          cost_model=loaded.cost_model, solver=loaded.solver)
    assert rebuilt.to_json() == text


def test_threaded_solves_on_one_state_equal_the_serial_ones() -> None:
    state, preemptor = small_cluster()
    preemptors = [tp.Workload(2000 + i, priority=100, whole_devices=1 + i % 2,
                              replica_scope=tp.TopologyRequirement.guaranteed("numa" if i % 2 == 0 else "socket"))
                  for i in range(8)]
    model = tp.LostWork()
    serial = [s.solve(state, p, model) for p in preemptors for s in ALL_SOLVERS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda job: job[1].solve(state, job[0], model),
                                 [(p, s) for p in preemptors for s in ALL_SOLVERS]))
    assert threaded == serial


def test_a_mutation_waits_for_running_solves() -> None:
    state, preemptor = small_cluster()
    started = threading.Event()
    release = threading.Event()

    def slow(victim: tp.Workload) -> float:
        started.set()
        release.wait(5.0)
        return 1.0

    results: list[tp.PreemptionPlan] = []
    worker = threading.Thread(target=lambda: results.append(
        tp.branch_and_bound.solve(state, preemptor, tp.CallableCostModel(slow))))
    worker.start()
    assert started.wait(5.0)
    removed = threading.Thread(target=lambda: state.remove(1))
    removed.start()
    removed.join(0.2)
    assert removed.is_alive(), "the mutation did not wait for the running solve"
    assert 1 in state
    release.set()
    worker.join(10.0)
    removed.join(10.0)
    assert results and 1 not in state


def make_cycle(in_a_sum: bool) -> object:
    """A cost model whose Python function refers (through its closure) to a dict that holds the
    model, or a weighted sum of it; returns a weak reference to an object only the cycle keeps.
    Nothing here is deleted by name: the frame's end leaves the closure's cells to the cycle."""
    import weakref

    class Sentinel:
        pass

    sentinel = Sentinel()
    holder: dict[str, object] = {}

    def evict(victim: tp.Workload) -> float:
        return 1.0 if holder and sentinel else 2.0

    model: tp.CostModel = tp.CallableCostModel(evict)
    holder["model"] = tp.WeightedSum(tp.VictimCount(), model) if in_a_sum else model
    return weakref.ref(sentinel)


@pytest.mark.parametrize("in_a_sum", [False, True], ids=["alone", "in_a_weighted_sum"])
def test_a_python_cost_model_in_a_cycle_is_collected(in_a_sum: bool) -> None:
    import gc

    alive = make_cycle(in_a_sum)
    gc.collect()
    assert alive() is None, "the model's cycle through its callable was never freed"  # type: ignore[operator]


def test_a_solve_nested_in_a_python_cost_model_keeps_both_preemptors() -> None:
    # The solve copies its preemptor into a per-thread buffer; a solve started from inside a
    # Python cost model on the same thread must not overwrite the outer one's copy.
    state, preemptor = small_cluster()
    other_state = state.copy()
    inner = tp.Workload(3000, name="an-inner-preemptor-with-a-long-name", priority=100, whole_devices=1,
                        replica_scope=tp.TopologyRequirement.guaranteed("numa"))
    inner_plans: list[tp.PreemptionPlan] = []

    def evict(victim: tp.Workload) -> float:
        if not inner_plans:
            inner_plans.append(tp.greedy.solve(other_state, inner, tp.VictimCount()))
        return 1.0 + victim.priority

    outer = tp.branch_and_bound.solve(state, preemptor, tp.CallableCostModel(evict))
    reference = tp.branch_and_bound.solve(state, preemptor, tp.PriorityWeighted(offset=1.0))
    assert outer.preemptor == preemptor.id and inner_plans and inner_plans[0].preemptor == inner.id
    assert (outer.victim_ids(), outer.placement, outer.cost) == \
        (reference.victim_ids(), reference.placement, reference.cost)
    assert inner_plans[0] == tp.greedy.solve(other_state, inner, tp.VictimCount())
