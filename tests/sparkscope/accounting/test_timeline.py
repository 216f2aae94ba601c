"""Task slots over time (sparkscope.accounting.timeline) on hand-built applications whose answer is
known in closed form."""

from __future__ import annotations

import pytest

from sparkscope.accounting.timeline import (
    ExecutorLife,
    StageSpan,
    longest_gap,
    slot_timeline,
)
from sparkscope.present.timeline_view import binned

T0 = 1_700_000_000_000
S = 1000


def _executors(n: int, cores: int, add: int = T0, remove: int | None = None) -> list[ExecutorLife]:
    driver = ExecutorLife("driver", True, 16, T0, None)  # never counted outside local mode
    return [driver] + [ExecutorLife(str(i), False, cores, add, remove) for i in range(1, n + 1)]


def test_a_full_stage_then_one_task_leaves_43_75_percent_idle_and_a_50_s_tail() -> None:
    # 2 executors x 4 cores for 100 s; 8 slots busy for 50 s, then one task for 50 s.
    stages = [
        StageSpan(0, 0, T0, T0 + 50 * S, task_time_ms=8 * 50 * S),
        StageSpan(1, 0, T0 + 50 * S, T0 + 100 * S, task_time_ms=50 * S),
    ]
    t = slot_timeline(T0, T0 + 100 * S, _executors(2, 4), stages, local=False)
    assert t.allocated_slot_ms == 800 * S
    assert t.busy_slot_ms == pytest.approx(450 * S)
    assert t.idle_fraction == pytest.approx(0.4375)
    assert t.idle_core_hours == pytest.approx(350 / 3600)
    assert t.tail_ms == 50 * S and t.tail_share == pytest.approx(0.5)
    assert t.longest_gap is None  # a stage ran at every moment
    assert t.method == "stages" and t.peak_allocated == 8


def test_the_same_run_from_every_task_gives_the_same_figures() -> None:
    full = [(T0, T0 + 50 * S)] * 8
    tail = [(T0 + 50 * S, T0 + 100 * S)]
    stages = [
        StageSpan(0, 0, T0, T0 + 50 * S, 0, tasks=full),
        StageSpan(1, 0, T0 + 50 * S, T0 + 100 * S, 0, tasks=tail),
    ]
    t = slot_timeline(T0, T0 + 100 * S, _executors(2, 4), stages, local=False)
    assert t.method == "tasks" and t.exact_stages == 2
    assert t.idle_fraction == pytest.approx(0.4375)
    assert t.tail_ms == 50 * S


def test_exact_tasks_see_the_straggler_a_stage_average_hides() -> None:
    # One stage of 100 s: 8 tasks of 10 s, then one task runs on to 100 s.
    tasks = [(T0, T0 + 10 * S)] * 7 + [(T0, T0 + 100 * S)]
    exact = slot_timeline(
        T0, T0 + 100 * S, _executors(2, 4), [StageSpan(0, 0, T0, T0 + 100 * S, 0, tasks)], False
    )
    assert exact.busy_slot_ms == 170 * S
    assert exact.tail_ms == 90 * S and exact.tail_share == pytest.approx(0.9)
    averaged = slot_timeline(
        T0, T0 + 100 * S, _executors(2, 4), [StageSpan(0, 0, T0, T0 + 100 * S, 170 * S)], False
    )
    # 1.7 slots on average, above the 1-slot line: the average sees no tail at all.
    assert averaged.busy_slot_ms == pytest.approx(170 * S) and averaged.tail_ms == 0


def test_executors_added_late_and_removed_early_are_clipped_to_the_run() -> None:
    executors = [
        ExecutorLife("1", False, 4, T0 - 30 * S, T0 + 40 * S),  # added before the start
        ExecutorLife("2", False, 2, T0 + 20 * S, None),  # never removed: held to the end
        ExecutorLife("3", False, 8, T0 + 200 * S, T0 + 300 * S),  # after the end: nothing
    ]
    t = slot_timeline(T0, T0 + 100 * S, executors, [], local=False)
    assert t.allocated_slot_ms == (4 * 40 + 2 * 80) * S
    assert t.idle_fraction == 1.0 and t.busy_slot_ms == 0
    assert t.longest_gap == (T0, T0 + 100 * S)  # no stage ran
    assert t.tail_ms == 100 * S  # nothing ever ran above one slot


def test_in_local_mode_the_driver_is_the_executor() -> None:
    driver = ExecutorLife("driver", True, 4, T0, None)
    stage = StageSpan(0, 0, T0, T0 + 10 * S, 40 * S)
    local = slot_timeline(T0, T0 + 10 * S, [driver], [stage], local=True)
    assert local.allocated_slot_ms == 40 * S and local.idle_fraction == 0
    cluster = slot_timeline(T0, T0 + 10 * S, [driver], [stage], local=False)
    assert cluster.allocated_slot_ms == 0 and cluster.idle_fraction is None
    assert cluster.capped_slot_ms == pytest.approx(40 * S)  # busy never exceeds allocated


def test_busy_above_allocated_is_capped_and_counted() -> None:
    stage = StageSpan(0, 0, T0, T0 + 10 * S, 12 * 10 * S)  # 12 slots on 8
    t = slot_timeline(T0, T0 + 10 * S, _executors(2, 4), [stage], local=False)
    assert t.busy_slot_ms == 80 * S and t.capped_slot_ms == pytest.approx(40 * S)


def test_the_tail_threshold_is_ten_percent_of_a_large_allocation() -> None:
    # 100 slots: 10 busy slots are still the tail, 11 are not.
    executors = _executors(25, 4)
    stages = [
        StageSpan(0, 0, T0, T0 + 60 * S, 11 * 60 * S),
        StageSpan(1, 0, T0 + 60 * S, T0 + 100 * S, 10 * 40 * S),
    ]
    t = slot_timeline(T0, T0 + 100 * S, executors, stages, local=False)
    assert t.tail_start_ms == T0 + 60 * S and t.tail_ms == 40 * S


def test_the_longest_gap_counts_the_start_and_the_end() -> None:
    spans = [(T0 + 5 * S, T0 + 20 * S), (T0 + 10 * S, T0 + 30 * S), (T0 + 42 * S, T0 + 50 * S)]
    assert longest_gap(T0, T0 + 60 * S, spans) == (T0 + 30 * S, T0 + 42 * S)
    assert longest_gap(T0, T0 + 100 * S, spans) == (T0 + 50 * S, T0 + 100 * S)
    assert longest_gap(T0, T0 + 50 * S, [(T0, T0 + 50 * S)]) is None
    stages = [StageSpan(i, 0, a, b, 0) for i, (a, b) in enumerate(spans)]
    assert slot_timeline(T0, T0 + 60 * S, [], stages, False).longest_gap == (
        T0 + 30 * S,
        T0 + 42 * S,
    )


def test_stages_without_times_are_left_out_and_counted_nowhere() -> None:
    stages = [StageSpan(0, 0, None, None, 10 * S), StageSpan(1, 0, T0, None, 10 * S)]
    t = slot_timeline(T0, T0 + 10 * S, _executors(1, 2), stages, local=False)
    assert t.busy_slot_ms == 0 and t.exact_stages == t.estimated_stages == 0


def test_binning_keeps_the_slot_time_of_every_bin() -> None:
    stages = [
        StageSpan(0, 0, T0, T0 + 50 * S, 8 * 50 * S),
        StageSpan(1, 0, T0 + 50 * S, T0 + 100 * S, 50 * S),
    ]
    t = slot_timeline(T0, T0 + 100 * S, _executors(2, 4), stages, local=False)
    edges, allocated, busy = binned(t, 4)
    assert list(edges) == [T0 + k * 25 * S for k in range(5)]
    assert list(allocated) == pytest.approx([8, 8, 8, 8])
    assert list(busy) == pytest.approx([8, 8, 1, 1])
    _edges, _alloc, busy3 = binned(t, 3)  # a bin across the change: its mean
    assert busy3[1] == pytest.approx((8 * (50 - 100 / 3) + 1 * (200 / 3 - 50)) / (100 / 3))
