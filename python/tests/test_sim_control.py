# SPDX-License-Identifier: MIT
"""The simulator's progress callable and periodic cluster controller through Python: the C++
tests' hand-computed traces (tests/test_sim_controller.cpp) give the same numbers, a controller
is steered and checked, errors are ValueError with nothing changed, a raised exception ends the
run, and runs with callbacks proceed in threads at once (the GIL is taken per call only)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import topopreempt as tp

ONE_SERVER = tp.shapes.single_machine(tp.shapes.rtx4090_server())


def trainer(id: int, replicas: int, min_replicas: int | None = None) -> tp.Workload:
    """A training job of `replicas` one-GPU workers; elastic down to `min_replicas` when given."""
    return tp.Workload(id, replicas=replicas, min_replicas=min_replicas, whole_devices=1,
                       resources=ONE_SERVER.schema.make({"cpu_milli": 2000, "memory_mib": 4096}))


def whole_server(id: int) -> tp.Workload:
    """Every GPU and core of the server, held by the controller."""
    return tp.Workload(id, name="inference", preemptible=False, whole_devices=8,
                       resources=ONE_SERVER.schema.make({"cpu_milli": 8000}))


def run(trace: list[tp.sim.TraceJob], interval: float,
        controller: Callable[[tp.sim.ClusterControl], object]) -> tp.sim.SimulationMetrics:
    return tp.sim.simulate(ONE_SERVER, trace, tp.greedy, tp.VictimCount(), verify_plans=True,
                           record_events=True, controller=controller, control_interval_s=interval)


def test_the_controller_is_called_every_interval_while_a_job_is_unfinished() -> None:
    calls: list[float] = []
    m = run([tp.sim.TraceJob(trainer(1, 1), 0.0, 100.0)], 30.0, lambda c: calls.append(c.now))
    assert calls == [0.0, 30.0, 60.0, 90.0]  # none after the completion
    assert m.control_calls == 4 and m.as_dict()["control_calls"] == 4
    assert m.mean_jct_s == 100.0 and m.end_time_s == 100.0


def test_growing_an_elastic_job_speeds_it_up() -> None:
    seen: list[float] = []

    def grow(control: tp.sim.ClusterControl) -> None:
        if control.now != 0.0:
            return
        (job,) = control.running()
        seen.append(job.remaining_work_s)
        assert job.id == 1 and job.replicas == 2 and job.min_replicas == 1
        assert control.grow(1, 2) == 2
        assert control.state().workload(1).replicas == 4

    m = run([tp.sim.TraceJob(trainer(1, 2, 1), 0.0, 100.0)], 1000.0, grow)
    assert seen == [100.0]
    assert m.grows == 2 and m.mean_jct_s == pytest.approx(50.0)  # twice the work rate


def test_shrinking_keeps_the_work_and_slows_the_job_down() -> None:
    def shrink(control: tp.sim.ClusterControl) -> None:
        if control.now == 50.0:
            assert control.running()[0].remaining_work_s == 50.0
            control.shrink(1, [0, 3])

    m = run([tp.sim.TraceJob(trainer(1, 4, 2), 0.0, 100.0)], 50.0, shrink)
    assert m.shrinks == 1 and m.victims == 0  # not a preemption plan's victim
    assert m.mean_jct_s == pytest.approx(150.0)


def test_evicting_loses_the_work_since_the_checkpoint() -> None:
    def evict(control: tp.sim.ClusterControl) -> None:
        if control.now == 50.0:
            control.evict(1)

    job = tp.sim.TraceJob(trainer(1, 1), 0.0, 100.0, checkpoint_interval_s=20.0, restart_delay_s=10.0)
    m = run([job], 50.0, evict)
    assert m.evictions == 1
    assert m.gpu_hours_lost == pytest.approx(10.0 / 3600.0)
    assert m.mean_jct_s == pytest.approx(120.0)  # back at 60 with 60 s of work left


@pytest.mark.parametrize("use", [tp.sim.HeldCapacity.idle, tp.sim.HeldCapacity.in_use])
def test_held_capacity_blocks_jobs(use: tp.sim.HeldCapacity) -> None:
    def hold(control: tp.sim.ClusterControl) -> None:
        if control.now == 0.0:
            server = whole_server(900)
            found = control.state().find_placement(server)
            assert found
            control.reserve(server, found.placement, use)
        elif control.now == 100.0:
            control.release(900)

    # Held at 0, before the job arrives at 1; released at 100; the job runs 100..110.
    m = run([tp.sim.TraceJob(trainer(1, 1), 1.0, 10.0)], 100.0, hold)
    assert m.mean_queue_s == pytest.approx(99.0) and m.mean_jct_s == pytest.approx(109.0)
    assert m.end_time_s == 110.0
    held = 0.0 if use == tp.sim.HeldCapacity.idle else 100.0
    assert m.mean_allocation_ratio == pytest.approx((held + 10.0 / 8.0) / 110.0)


def test_invalid_actions_are_value_errors_and_change_nothing() -> None:
    checked: list[bool] = []

    def misbehave(control: tp.sim.ClusterControl) -> None:
        if control.now != 0.0:
            return
        with pytest.raises(ValueError, match="77"):
            control.evict(77)
        with pytest.raises(ValueError, match="not running"):
            control.evict(2)
        with pytest.raises(ValueError, match="not elastic"):
            control.grow(1, 1)
        with pytest.raises(ValueError):
            control.shrink(1, [0])
        preemptible = whole_server(900)
        preemptible.preemptible = True
        with pytest.raises(ValueError, match="preemptible"):
            control.reserve(preemptible, tp.Placement(), tp.sim.HeldCapacity.idle)
        with pytest.raises(ValueError, match="not a reservation"):
            control.release(1)
        with pytest.raises(TypeError):
            control.evict("1")  # type: ignore[arg-type]
        assert control.state().workload(1).replicas == 2
        assert [job.id for job in control.waiting()] == [2]
        checked.append(True)

    trace = [tp.sim.TraceJob(trainer(1, 2), 0.0, 100.0), tp.sim.TraceJob(trainer(2, 8), 0.0, 50.0)]
    m = run(trace, 1000.0, misbehave)
    assert checked == [True]
    assert m.mean_jct_s == pytest.approx((100.0 + 150.0) / 2.0)
    with pytest.raises(ValueError, match="control_interval_s"):
        tp.sim.simulate(ONE_SERVER, trace, tp.greedy, tp.VictimCount(), controller=lambda c: None)


def test_a_control_kept_past_its_call_is_refused() -> None:
    kept: list[tp.sim.ClusterControl] = []
    run([tp.sim.TraceJob(trainer(1, 1), 0.0, 10.0)], 100.0, kept.append)
    assert len(kept) == 1
    with pytest.raises(ValueError, match="after its controller call"):
        kept[0].running()
    with pytest.raises(ValueError, match="after its controller call"):
        _ = kept[0].now


def test_an_exception_in_a_callback_ends_the_run_and_propagates() -> None:
    class Stop(Exception):
        pass

    def stop(where: tp.sim.SimulationProgress) -> None:
        if where.events >= 3:
            raise Stop(f"stopped at {where.events} events")

    trace = [tp.sim.TraceJob(trainer(i, 1), float(i), 10.0) for i in range(1, 6)]
    with pytest.raises(Stop, match="stopped at 4 events"):
        tp.sim.simulate(ONE_SERVER, trace, tp.greedy, tp.VictimCount(), progress=stop, progress_every=2)

    def broken(control: tp.sim.ClusterControl) -> None:
        raise Stop("controller")

    with pytest.raises(Stop, match="controller"):
        run(trace, 5.0, broken)


def test_progress_is_reported_every_n_events_and_at_the_end() -> None:
    trace = [tp.sim.TraceJob(trainer(i, 1 + i % 3), float(i), 5.0 + i) for i in range(1, 13)]
    seen: list[tp.sim.SimulationProgress] = []
    m = tp.sim.simulate(ONE_SERVER, trace, tp.greedy, tp.VictimCount(), progress=seen.append,
                        progress_every=5)
    assert [p.events for p in seen[:-1]] == list(range(5, 5 * len(seen), 5))
    last = seen[-1]
    assert last.jobs == 12 and last.jobs_finished == m.jobs_completed == 12
    assert last.now_s == m.end_time_s and last.preemptions == m.preemptions
    times = [p.now_s for p in seen]
    assert times == sorted(times)


def test_runs_with_callbacks_proceed_in_threads_at_once() -> None:
    topology = tp.shapes.cluster(tp.shapes.rtx4090_server(), 4, 4)
    trace = [tp.sim.TraceJob(tp.Workload(i, priority=i % 3 * 50, whole_devices=1 + i % 4,
                                         replica_scope=tp.TopologyRequirement.guaranteed("socket")),
                             float(i), 30.0 + i % 7) for i in range(1, 200)]

    def simulate(index: int) -> tuple[str, int, int]:
        calls = [0, 0]

        def progress(where: tp.sim.SimulationProgress) -> None:
            calls[0] += 1

        def controller(control: tp.sim.ClusterControl) -> None:
            calls[1] += 1
            assert len(control.running()) + len(control.waiting()) <= len(trace)

        m = tp.sim.simulate(topology, trace, tp.branch_and_bound, tp.LostWork(), progress=progress,
                            progress_every=10, controller=controller, control_interval_s=20.0)
        return m.digest(), calls[0], calls[1]

    serial = [simulate(i) for i in range(2)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(simulate, range(4)))
    assert threaded == serial * 2
    assert serial[0][1] > 1 and serial[0][2] > 1
