"""The simulation on constructed stages whose answers are known by hand."""

from __future__ import annotations

import pytest

from sparkscope.advisor.whatif.simulate import build_plan, simulate, slots_for
from sparkscope.advisor.whatif.stageplan import AppRun, StageRun, rebuild_tasks

GRID = tuple(round(i * 0.05, 2) for i in range(21))


def spark_quantiles(times: list[float]) -> tuple[float, ...]:
    """What the SHS answers for these task times on the 0.05 grid (index floor(q*n), capped)."""
    s = sorted(times)
    n = len(s)
    return tuple(s[min(int(q * n + 1e-9), n - 1)] for q in GRID)


def stage(
    stage_id: int,
    times: list[float],
    submitted: int,
    completed: int,
    slowest: int = 0,
    overhead: float = 0.0,
) -> StageRun:
    q = spark_quantiles(times)
    return StageRun(
        stage_id=stage_id,
        num_tasks=len(times),
        run_time_ms=float(sum(times)),
        quantiles=GRID,
        run_q=q,
        duration_q=tuple(v + overhead for v in q),
        slowest_ms=tuple(sorted(times, reverse=True)[:slowest]),
        submitted_ms=submitted,
        completed_ms=completed,
    )


def run(stages: list[StageRun], end: int, executors: int, start: int = 0) -> AppRun:
    return AppRun(start_ms=start, end_ms=end, executors=executors, cores=1, stages=tuple(stages))


def test_small_stage_is_rebuilt_exactly_from_its_quantiles() -> None:
    times = [float(x) for x in (5, 80, 13, 400, 7, 7, 90, 61, 33, 2, 250, 18, 19, 20, 500, 44, 45)]
    got = rebuild_tasks(stage(0, times, 0, 1))
    assert list(got) == sorted(times)


def test_big_stage_keeps_its_total_and_its_slowest_tasks() -> None:
    times = [100.0] * 95 + [3000.0, 2500.0, 2000.0, 1500.0, 1200.0]
    got = rebuild_tasks(stage(0, times, 0, 1, slowest=5))
    assert sorted(got)[-5:] == [1200.0, 1500.0, 2000.0, 2500.0, 3000.0]
    assert sum(got) == pytest.approx(sum(times), rel=1e-6)


def test_uniform_tasks_scale_with_slots() -> None:
    # 16 tasks of 1 s observed on 4 slots: 4 waves of 1 s.
    app = run([stage(0, [1000.0] * 16, 0, 4000)], end=4000, executors=4)
    plan = build_plan(app)
    assert simulate(plan, 4).duration_ms == pytest.approx(4000)
    assert simulate(plan, 2).duration_ms == pytest.approx(8000)
    assert simulate(plan, 1).duration_ms == pytest.approx(16000)
    assert simulate(plan, 8).duration_ms == pytest.approx(2000)
    assert simulate(plan, 16).duration_ms == pytest.approx(1000)
    assert simulate(plan, 64).duration_ms == pytest.approx(1000)  # one task per slot at best
    assert simulate(plan, 2, cores=4).duration_ms == pytest.approx(2000)  # 8 slots


def test_one_straggler_caps_the_speed_up() -> None:
    times = [100.0] * 39 + [5000.0]
    # Observed on 40 slots: every task at once, the straggler decides.
    app = run([stage(0, times, 0, 5000, slowest=20)], end=5000, executors=40)
    plan = build_plan(app)
    assert simulate(plan, 40).duration_ms == pytest.approx(5000)
    assert simulate(plan, 400).duration_ms == pytest.approx(5000)
    assert simulate(plan, 1).duration_ms == pytest.approx(8900)
    # On 2 slots: 8,900 ms of work, but one slot holds the 5 s task: at least 5,000, at most
    # the straggler plus the other slot's share.
    two = simulate(plan, 2).duration_ms
    assert 5000 <= two <= 5000 + 3900
    assert simulate(plan, 40).floor_ms == pytest.approx(5000)


def test_a_chain_of_dependent_stages_adds_up_with_driver_gaps() -> None:
    # Stage 0 (8 x 1 s) on 2 slots = 4 s; 500 ms of driver work; stage 1 (4 x 2 s) = 4 s.
    s0 = stage(0, [1000.0] * 8, submitted=1000, completed=5000)
    s1 = stage(1, [2000.0] * 4, submitted=5500, completed=9500)
    app = run([s0, s1], end=10000, executors=2)
    plan = build_plan(app)
    assert plan.preds[1] == [0] and plan.preds[0] == []
    # start-up 1 s + 4 s + 0.5 s + 4 s + 0.5 s tail.
    assert simulate(plan, 2).duration_ms == pytest.approx(10000)
    # 4 slots: 2 s + 2 s for the stages, driver time unchanged.
    assert simulate(plan, 4).duration_ms == pytest.approx(1000 + 2000 + 500 + 2000 + 500)
    assert simulate(plan, 1).duration_ms == pytest.approx(1000 + 8000 + 500 + 8000 + 500)
    # The floor: each stage as long as its longest task, plus the driver-only time.
    assert simulate(plan, 1).floor_ms == pytest.approx(1000 + 1000 + 500 + 2000 + 500)


def test_independent_concurrent_stages_share_the_slots() -> None:
    # Two stages of 4 x 1 s submitted together, observed on 8 slots: 1 s.
    s0 = stage(0, [1000.0] * 4, submitted=0, completed=1000)
    s1 = stage(1, [1000.0] * 4, submitted=0, completed=1000)
    plan = build_plan(run([s0, s1], end=1000, executors=8))
    assert plan.preds == [[], []]
    assert simulate(plan, 8).duration_ms == pytest.approx(1000)
    # On 2 slots 8 s of work cannot take less than 4 s.
    assert simulate(plan, 2).duration_ms == pytest.approx(4000)


def test_startup_and_contention_corrections() -> None:
    app = run([stage(0, [1000.0] * 16, 2000, 6000)], end=6000, executors=4)
    plan = build_plan(app)
    assert plan.startup_ms == 2000
    assert simulate(plan, 4, startup_ms=5000).duration_ms == pytest.approx(9000)
    assert simulate(plan, 4, task_scale=1.5).duration_ms == pytest.approx(2000 + 6000)


def test_task_overhead_beyond_run_time_holds_the_slot() -> None:
    # Run time 1 s, duration 1.2 s (deserialisation, scheduler delay): 4 waves of 1.2 s.
    app = run([stage(0, [1000.0] * 16, 0, 4800, overhead=200.0)], end=4800, executors=4)
    assert simulate(build_plan(app), 8).duration_ms == pytest.approx(2400)


def test_dynamic_allocation_gives_a_stage_only_the_executors_its_tasks_ask_for() -> None:
    s0 = stage(0, [1000.0] * 4, 0, 1000)
    app = AppRun(start_ms=0, end_ms=1000, executors=4, cores=2, stages=(s0,), dynamic=True)
    assert slots_for(app, 50, 2, s0) == 4  # 2 executors of 2 cores
    assert slots_for(app, 1, 2, s0) == 2
    plan = build_plan(app)
    low = simulate(plan, 1, 2)
    high = simulate(plan, 50, 2)
    assert low.duration_ms == pytest.approx(2000)
    assert high.duration_ms == pytest.approx(1000)
    # Cost follows the executors used, not maxExecutors.
    assert high.executor_core_ms == pytest.approx(1000 * 4)


def test_more_input_means_more_scan_tasks() -> None:
    s0 = StageRun(
        stage_id=0,
        num_tasks=8,
        run_time_ms=8000.0,
        quantiles=GRID,
        run_q=(1000.0,) * 21,
        submitted_ms=0,
        completed_ms=2000,
        input_bytes=8 << 20,
    )
    plan = build_plan(AppRun(0, 2000, 4, 1, (s0,)))
    assert simulate(plan, 4, input_scale=2.0).duration_ms == pytest.approx(4000)
