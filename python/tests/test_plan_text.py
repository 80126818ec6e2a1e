# SPDX-License-Identifier: MIT
"""Plans without text: solvers built `without_text()` return the structured facts only
(victims' `freed`/`freed_in`, verdicts' `kind` and numbers, the plan's `tier`), `explain` and
`IncrementalDecider.explain` word them to exactly the text the solver with text returns, and bad
input to them is a ValueError, not a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

import topopreempt as tp

from conftest import ROOT, SNAPSHOTS, small_cluster

INDEX_SOLVERS: list[tp.Solver] = [
    tp.greedy, tp.knapsack, tp.branch_and_bound,
    tp.KnapsackSolver(max_cells=16),          # falls back to greedy: downgrades, notes
    tp.BranchAndBoundSolver(node_limit=3),    # stops early: a gap, limit_reached
]
WHOLE = tp.whole_devices_dimension
SNAPSHOT_DIR = ROOT / "examples" / "snapshots"


def models() -> list[tp.CostModel]:
    """Every kind of model explain is instantiated for: built-in, described (a weighted sum
    prints its cost parts), and Python."""
    return [tp.LostWork(), tp.PriorityWeighted(), tp.VictimCount(),
            tp.WeightedSum(tp.LostWork(), tp.ReloadTime()),
            tp.CallableCostModel(lambda v: 1.0 + v.priority)]


def snapshot(path: Path) -> tuple[tp.Allocation, tp.Workload]:
    """A snapshot file's state and preemptor."""
    loaded = tp.load_snapshot(str(path))
    assert isinstance(loaded.state, tp.Allocation)
    return loaded.state, loaded.preemptor


def generated(nodes: int, seed: int, elastic_fraction: float = 0.0, occupancy: float = 0.92) -> tp.Allocation:
    spec = tp.ClusterSpec(nodes=nodes, nodes_per_rack=8, seed=seed, target_occupancy=occupancy)
    spec.elastic_fraction = elastic_fraction
    return tp.generate_cluster(spec)


def has_no_text(plan: tp.PreemptionPlan) -> bool:
    return plan.explanation == "" and all(v.reason == "" for v in plan.victims) and \
        all(r.reason == "" for r in plan.rejected)


def facts(plan: tp.PreemptionPlan) -> tuple[object, ...]:
    """Everything but the text and the wall time."""
    victims = [(v.id, v.action, list(v.dropped_replicas), v.cost, v.freed_in,
                [(f.dimension, f.amount) for f in v.freed]) for v in plan.victims]
    verdicts = [(r.domain, r.kind, r.dimension, r.have, r.need, r.victims, r.value, r.best, r.note)
                for r in plan.rejected]
    return (plan.status, plan.solver, victims, plan.target_domain, plan.cost, plan.lower_bound,
            plan.tier, verdicts, plan.rejected_total, [(d.domain, d.reason, d.detail) for d in plan.downgrades],
            plan.preemptor, [(d.domain, d.version) for d in plan.dependencies])


def check_text_contract(solver: tp.Solver, state: tp.Allocation, preemptor: tp.Workload,
                        model: tp.CostModel) -> tuple[tp.PreemptionPlan, tp.PreemptionPlan]:
    """Solves with and without text; explain must close the gap exactly. Returns both plans."""
    assert isinstance(solver, (tp.GreedySolver, tp.KnapsackSolver, tp.BranchAndBoundSolver))
    quiet = solver.without_text()
    with_text = solver.solve(state, preemptor, model)
    without = quiet.solve(state, preemptor, model)
    assert with_text.explanation.startswith(f"{solver.name} (cost model {model.name}): {with_text.status}\n")
    assert all(v.reason for v in with_text.victims) and all(r.reason for r in with_text.rejected)
    assert has_no_text(without)
    assert facts(without) == facts(with_text)
    assert without != with_text  # the text is part of a plan's equality
    assert all(v.freed_in is not None for v in without.victims)
    assert all(r.kind != tp.RejectionKind.text_only for r in without.rejected)
    assert tp.verify_plan(state, preemptor, without, model).ok  # the facts are all it needs

    worded = tp.explain(without, state, preemptor, model)
    assert worded.explanation == with_text.explanation
    assert [v.reason for v in worded.victims] == [v.reason for v in with_text.victims]
    assert [r.reason for r in worded.rejected] == [r.reason for r in with_text.rejected]
    assert worded == with_text
    assert has_no_text(without)  # explain returns a worded copy; its argument is left alone
    assert tp.explain(worded, state, preemptor, model) == worded  # text already there is kept
    assert tp.explain(with_text, state, preemptor, model) == with_text
    return with_text, without


def test_without_text_is_the_same_solver_without_text() -> None:
    for solver in (tp.greedy, tp.knapsack, tp.branch_and_bound):
        assert solver.builds_text
        quiet = solver.without_text()
        assert type(quiet) is type(solver) and quiet.name == solver.name
        assert not quiet.builds_text and solver.builds_text  # a copy: the shared instance keeps its text
        assert quiet.is_exact == solver.is_exact and quiet.is_baseline == solver.is_baseline
        assert repr(quiet) == f"<Solver {solver.name} without text>" and repr(solver) == f"<Solver {solver.name}>"
        assert not quiet.without_text().builds_text
    # Options survive.
    bounded = tp.BranchAndBoundSolver(node_limit=77, time_limit_ms=1500.0).without_text()
    assert (bounded.node_limit, bounded.time_limit_ms, bounded.builds_text) == (77, 1500.0, False)
    cells = tp.KnapsackSolver(max_cells=1024).without_text()
    assert (cells.max_cells, cells.builds_text) == (1024, False)
    # The baselines always word their plans and have no quiet form.
    for baseline in (tp.kube_default, tp.exhaustive_subsets):
        assert baseline.builds_text and not hasattr(baseline, "without_text")


def test_options_hold_in_a_solver_without_text() -> None:
    state = generated(24, seed=4, elastic_fraction=0.4)
    preemptor = tp.make_preemptor(tp.PreemptorKind.rack_gang, 16)
    model = tp.LostWork()
    limited = tp.BranchAndBoundSolver(node_limit=3)
    with_text, without = check_text_contract(limited, state, preemptor, model)
    assert without.statistics.limit_reached and without.downgrades
    assert without.downgrades[0].reason == tp.DowngradeReason.node_limit
    # Without its limit the same solver proves a cheaper plan: the copy kept the option.
    unlimited = tp.branch_and_bound.without_text().solve(state, preemptor, model)
    assert unlimited.status == tp.PlanStatus.optimal and not unlimited.statistics.limit_reached
    assert unlimited.cost < without.cost


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
def test_explain_words_snapshot_plans_to_the_solvers_text(path: Path) -> None:
    state, preemptor = snapshot(path)
    for model in models():
        for solver in INDEX_SOLVERS:
            check_text_contract(solver, state, preemptor, model)


@pytest.mark.parametrize("occupancy", [1.0, 0.85, 0.5])
def test_explain_words_generated_cluster_plans_to_the_solvers_text(occupancy: float) -> None:
    # Busy (every kind must preempt), half busy (some fit already), elastic victims (shrinks).
    state = generated(24, seed=2, elastic_fraction=0.4, occupancy=occupancy)
    statuses = set()
    for kind, gpus in ((tp.PreemptorKind.numa, 1), (tp.PreemptorKind.nvlink_island, 4),
                       (tp.PreemptorKind.socket, 4), (tp.PreemptorKind.node, 8),
                       (tp.PreemptorKind.rack_gang, 16), (tp.PreemptorKind.best_effort, 8)):
        preemptor = tp.make_preemptor(kind, gpus)
        for solver in INDEX_SOLVERS:
            with_text, _ = check_text_contract(solver, state, preemptor, tp.LostWork())
            statuses.add(with_text.status)
    assert tp.PlanStatus.optimal in statuses or tp.PlanStatus.feasible in statuses


def test_structured_facts_are_the_cpp_values() -> None:
    """The facts of examples/snapshots' plans as the C++ solvers return them (printed by a C++
    program over the same snapshot files), and the words each verdict's numbers make."""
    state, preemptor = snapshot(SNAPSHOT_DIR / "paper-server.json")
    schema = state.topology.schema
    cpu, memory = schema.index_of("cpu_milli"), schema.index_of("memory_mib")
    plan = tp.branch_and_bound.without_text().solve(state, preemptor, tp.LostWork())
    assert (plan.status, plan.tier, plan.cost, plan.target_domain, plan.rejected_total) == \
        (tp.PlanStatus.optimal, 0, 602.0, 4, 7)
    assert [(v.id, v.action, v.cost, v.freed_in) for v in plan.victims] == \
        [(100, tp.VictimAction.evict, 601.0, 4), (200, tp.VictimAction.evict, 1.0, 4)]
    assert plan.victims[0].freed == plan.victims[0].freed  # __eq__ on FreedAmount
    assert [[(f.dimension, f.amount) for f in v.freed] for v in plan.victims] == \
        [[(WHOLE, 1.0), (cpu, 2000.0), (memory, 16384.0)], [(cpu, 8000.0), (memory, 16384.0)]]
    bound = tp.RejectionKind.bound
    assert [(r.domain, r.kind, r.value, r.best) for r in plan.rejected] == \
        [(8, bound, 661.0, 602.0), (16, bound, 781.0, 602.0), (21, bound, 841.0, 602.0),
         (25, bound, 901.0, 602.0), (29, bound, 961.0, 602.0), (33, bound, 1021.0, 602.0),
         (12, tp.RejectionKind.hopeless, 0.0, 0.0)]
    hopeless = plan.rejected[-1]
    assert (hopeless.dimension, hopeless.have, hopeless.need, hopeless.victims, hopeless.note) == \
        (cpu, 2000.0, 6000.0, 1, "")
    worded = tp.explain(plan, state, preemptor, tp.LostWork())
    for verdict in worded.rejected[:-1]:
        assert verdict.reason == f"lower bound {verdict.value:g} >= best cost {verdict.best:g}"
    assert worded.rejected[-1].reason == \
        "even evicting all 1 eligible victims frees 2000 of the 6000 cpu_milli missing"
    gpu = state.topology.levels[state.topology.device_level].upper()
    assert worded.victims[0].reason == \
        f"evicted whole; frees 1 whole {gpu}, 2000 cpu_milli, 16384 memory_mib in " \
        f"{state.topology.describe(4)}"

    # Under priority_weighted: costlier and no_better verdicts, the latter with the search's note.
    plan = tp.branch_and_bound.without_text().solve(state, preemptor, tp.PriorityWeighted())
    assert [(r.domain, r.kind, r.value, r.best, r.note) for r in plan.rejected][:4] == \
        [(21, tp.RejectionKind.no_better, 0.0, 4294967326.0, "proved: nothing here beats the best"),
         (8, tp.RejectionKind.no_better, 0.0, 4294967326.0, "proved: nothing here beats the best"),
         (25, tp.RejectionKind.no_better, 0.0, 4294967326.0, "proved: nothing here beats the best"),
         (4, tp.RejectionKind.costlier, 4294967326.0, 4294967319.0, "")]

    # A shrink victim and a domain the preemption index dismissed unread.
    hgx, hgx_preemptor = snapshot(SNAPSHOT_DIR / "hgx-rack.json")
    plan = tp.knapsack.without_text().solve(hgx, hgx_preemptor, tp.LostWork())
    assert [(v.id, v.action, v.cost, v.freed_in) for v in plan.victims] == \
        [(11, tp.VictimAction.evict, 601.0, 1), (12, tp.VictimAction.evict, 9601.0, 1),
         (13, tp.VictimAction.shrink, 7201.0, 1), (15, tp.VictimAction.evict, 61.0, 1)]
    assert [(f.dimension, f.amount) for f in plan.victims[2].freed][0] == (WHOLE, 4.0)
    (unread,) = plan.rejected
    assert (unread.domain, unread.kind, unread.dimension, unread.have, unread.need) == \
        (36, tp.RejectionKind.hopeless_unread, WHOLE, 6.0, 14.0)

    # An infeasible plan: every candidate too small, in whole devices.
    unplaceable, wide = snapshot(SNAPSHOT_DIR / "infeasible-guarantee.json")
    plan = tp.greedy.without_text().solve(unplaceable, wide, tp.LostWork())
    assert plan.status == tp.PlanStatus.infeasible and plan.target_domain is None and plan.tier == 0
    assert [(r.domain, r.kind, r.dimension, r.have, r.need) for r in plan.rejected] == \
        [(d, tp.RejectionKind.too_small, WHOLE, 1.0, 2.0) for d in (4, 8, 12, 16, 21, 25, 29, 33)]
    worded = tp.explain(plan, unplaceable, wide, tp.LostWork())
    assert worded.rejected[0].reason == f"too small: holds 1 whole {gpu}, needs 2"

    # A domain dismissed by its index bound, and knapsack's greedy fallback saying why.
    shares, share = snapshot(SNAPSHOT_DIR / "gpu-shares.json")
    plan = tp.knapsack.without_text().solve(shares, share, tp.LostWork())
    assert [(r.domain, r.kind, r.value, r.best) for r in plan.rejected] == \
        [(7, tp.RejectionKind.bound_unread, 1.0, 1.0), (13, tp.RejectionKind.bound_unread, 1.0, 1.0)]
    plan = tp.knapsack.without_text().solve(shares, share, tp.PriorityWeighted())
    assert [(r.kind, r.note) for r in plan.rejected] == \
        [(tp.RejectionKind.costlier,
          "greedy fallback: a device share must fit on one device: not a single covering")] * 2


def best_effort_pair() -> tuple[tp.Allocation, tp.Workload]:
    """small_cluster's busy servers (one GPU per NUMA node) and a preemptor that would like its
    2 GPUs in one NUMA node: only the next tier (a socket) holds them."""
    state, preemptor = small_cluster()
    return state, tp.Workload(preemptor.id, priority=100, whole_devices=2,
                              replica_scope=tp.TopologyRequirement.best_effort("numa"))


def test_a_plan_found_past_the_preferred_levels_has_its_tier() -> None:
    state, preemptor = best_effort_pair()
    for solver in (tp.greedy, tp.knapsack, tp.branch_and_bound):
        with_text, without = check_text_contract(solver, state, preemptor, tp.LostWork())
        assert without.tier == 1 and without.has_victims_plan() and without.target_domain is not None
        assert f"target: {state.topology.describe(without.target_domain)} (replicas in one socket)\n" in \
            with_text.explanation
    # Its preferred tier, where it can be had: the tier is 0.
    state.remove(state.workload_ids()[0])
    state.remove(state.workload_ids()[0])
    assert tp.branch_and_bound.without_text().solve(state, preemptor, tp.LostWork()).tier == 0


def test_rejection_kind_round_trips() -> None:
    names = ["too_small", "hopeless", "hopeless_unread", "too_few_hosts", "bound", "bound_unread",
             "costlier", "no_better", "text_only"]
    assert [kind.name for kind in tp.RejectionKind] == names
    for value, name in enumerate(names):  # the C++ enumerators' values, in order
        kind = tp.RejectionKind(value)
        assert kind.name == name and str(kind) == name and int(kind.value) == value
        assert tp.RejectionKind[name] is kind and getattr(tp.RejectionKind, name) is kind
    with pytest.raises(ValueError):
        tp.RejectionKind(len(names))
    # Through a plan and back out: the kind a solver set is the enum member, and equal verdicts
    # compare equal.
    state, preemptor = small_cluster()
    plan = tp.branch_and_bound.solve(state, preemptor, tp.LostWork())
    assert plan.rejected and all(isinstance(r.kind, tp.RejectionKind) for r in plan.rejected)
    again = tp.branch_and_bound.solve(state, preemptor, tp.LostWork())
    assert plan.rejected == again.rejected and plan.victims == again.victims
    assert tp.RejectionKind[plan.rejected[0].kind.name] is plan.rejected[0].kind
    # A baseline words its verdicts and victims only.
    baseline = tp.kube_default.solve(state, preemptor, tp.LostWork())
    assert all(r.kind == tp.RejectionKind.text_only and r.reason for r in baseline.rejected)
    assert all(v.freed_in is None and v.freed == [] and v.reason for v in baseline.victims)


def test_the_decider_returns_its_solvers_plan_and_words_it_alike() -> None:
    state = generated(24, seed=11, elastic_fraction=0.3)
    model = tp.WeightedSum(tp.LostWork(), tp.ReloadTime())
    preemptor = tp.make_preemptor(tp.PreemptorKind.socket, 4)
    quiet = tp.branch_and_bound.without_text()
    decider = tp.IncrementalDecider(quiet, model, preemptor)
    with_text = tp.IncrementalDecider(tp.branch_and_bound, model, preemptor)
    for _ in range(4):
        plan = decider.decide(state)
        assert has_no_text(plan) and plan == quiet.solve(state, preemptor, model)
        worded = decider.explain(plan, state)
        assert worded == tp.branch_and_bound.solve(state, preemptor, model) == with_text.decide(state)
        assert worded == tp.explain(plan, state, preemptor, model) and has_no_text(plan)
        assert decider.explain(worded, state) == worded
        # A change between decisions: a victim goes.
        if worded.victims:
            state.remove(worded.victims[0].id)


def test_bad_input_to_explain_is_a_value_error() -> None:
    state, preemptor = small_cluster()
    model = tp.LostWork()
    plan = tp.branch_and_bound.without_text().solve(state, preemptor, model)
    assert plan.victims

    other = tp.Workload(preemptor.id + 1, priority=100, whole_devices=2)
    with pytest.raises(ValueError, match=r"for workload 1000 cannot be explained for workload 1001"):
        tp.explain(plan, state, other, model)
    # The same id, another shape: a tier it does not have.
    pair_state, pair = best_effort_pair()
    tiered = tp.greedy.without_text().solve(pair_state, pair, model)
    assert tiered.tier == 1
    with pytest.raises(ValueError, match="the plan's tier 1 is not one of workload 1000 'tp-pair''s"):
        tp.explain(tiered, pair_state, preemptor, model)

    # A plan explained on another state: its domains are not there.
    big = generated(16, seed=5)
    impossible = tp.make_preemptor(tp.PreemptorKind.rack_gang, 128, replicas=64)  # 2 racks' worth
    infeasible = tp.greedy.without_text().solve(big, impossible, model)
    assert infeasible.status == tp.PlanStatus.infeasible and infeasible.rejected
    tiny = tp.Allocation(tp.shapes.single_machine(tp.shapes.rtx4090_server()))
    assert max(r.domain for r in infeasible.rejected) >= len(tiny.topology)
    with pytest.raises(ValueError, match="is not a domain of the state's topology"):
        tp.explain(infeasible, tiny, impossible, model)
    # Victims that the state does not run.
    with pytest.raises(ValueError, match="victim [0-9]+ is not running in the state"):
        tp.explain(plan, tp.Allocation(state.topology), preemptor, model)

    # After commit: the victims are gone.
    committed = state.copy()
    assert tp.commit(committed, plan, preemptor)
    with pytest.raises(ValueError, match="not running in the state.*before it is committed"):
        tp.explain(plan, committed, preemptor, model)
    # A plan without victims, committed: the preemptor runs, which the library refuses as
    # solve does.
    empty = tp.Allocation(state.topology)
    fits = tp.greedy.without_text().solve(empty, preemptor, model)
    assert fits.status == tp.PlanStatus.no_preemption_needed and has_no_text(fits)
    assert tp.commit(empty, fits, preemptor)
    with pytest.raises(ValueError, match="already running"):
        tp.explain(fits, empty, preemptor, model)
    with pytest.raises(TypeError):
        tp.explain("plan", state, preemptor, model)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tp.explain(plan, state, preemptor, "lost_work")  # type: ignore[arg-type]

    # The decider checks alike, against its own preemptor.
    decider = tp.IncrementalDecider(tp.greedy.without_text(), model, other)
    with pytest.raises(ValueError, match="cannot be explained for workload 1001"):
        decider.explain(plan, state)
    # Nothing was changed by the failures: the plan still words to the solver's text.
    assert has_no_text(plan)
    assert tp.explain(plan, state, preemptor, model) == tp.branch_and_bound.solve(state, preemptor, model)


def test_plan_queue_and_the_simulator_take_a_solver_without_text() -> None:
    state, first = small_cluster()
    second = tp.Workload(1001, priority=90, whole_devices=1,
                         replica_scope=tp.TopologyRequirement.guaranteed("numa"))
    model = tp.VictimCount()
    quiet = tp.plan_queue(state, [second, first], tp.branch_and_bound.without_text(), model)
    worded = tp.plan_queue(state, [second, first], tp.branch_and_bound, model)
    assert [q.preemptor for q in quiet.plans] == [1000, 1001]
    assert all(has_no_text(q.plan) and q.plan.has_victims_plan() for q in quiet.plans)
    # Each plan is worded on the state the queue planned it on: the one the plans before it
    # leave, committed in result order.
    for queued, expected in zip(quiet.plans, worded.plans):
        preemptor = first if queued.preemptor == first.id else second
        assert tp.explain(queued.plan, state, preemptor, model) == expected.plan
        assert tp.commit(state, queued.plan, preemptor)

    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 4, 4)
    trace = tp.sim.load_trace_csv(str(ROOT / "examples" / "traces" / "sample.csv"), topology)
    runs = [tp.sim.simulate(topology, trace, solver, tp.PriorityWeighted(offset=1.0), verify_plans=True,
                            min_preemptor_priority=100, seed=42).as_dict()
            for solver in (tp.branch_and_bound, tp.branch_and_bound.without_text())]
    for run in runs:  # the decisions' wall times are all that may differ
        for key in [k for k in run if k.startswith("decision_")]:
            del run[key]
    assert runs[0] == runs[1] and runs[0]["preemptions"] > 0 and runs[0]["plans_rejected"] == 0
