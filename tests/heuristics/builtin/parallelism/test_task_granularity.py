"""task_granularity: many tiny tasks, or fewer long tasks than task slots."""

from __future__ import annotations

import pytest

from heuristics.builtin.parallelism import task_granularity
from heuristics.result import Severity
from tests.heuristics.builders import MIN_MS, make_app, make_distribution, make_stage, run

P = task_granularity.Params()


def tiny_app(median_ms: float, num_tasks: int = 2000, **dist: float) -> object:
    stage = make_stage(
        7,
        num_tasks=num_tasks,
        executor_run_time_ms=round(median_ms * num_tasks),
        distribution=make_distribution(executor_run_time_ms=median_ms, **dist),
    )
    return make_app(stages=[stage])


@pytest.mark.parametrize(
    ("median_ms", "expected"),
    [
        (501, Severity.NONE),
        (500, Severity.LOW),
        (251, Severity.LOW),
        (250, Severity.MODERATE),
        (101, Severity.MODERATE),
        (100, Severity.SEVERE),
        (51, Severity.SEVERE),
        (50, Severity.CRITICAL),
    ],
)
def test_tiny_tasks(median_ms: float, expected: Severity) -> None:
    result = run(task_granularity, tiny_app(median_ms), P)
    assert result.severity == expected
    assert result.value == median_ms


def test_tiny_tasks_suggestion_and_impact() -> None:
    result = run(task_granularity, tiny_app(50, scheduler_delay_ms=20), P)
    # 2000 tasks x 50 ms = 100 s of work; at 60 s per task that is 2 tasks, but keep 8 slots busy
    assert "suggest 8 partitions" in result.title
    assert result.details is not None and result.details.rows[0][1] == "tiny tasks"
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx((2000 - 8) * 20 / 3_600_000)
    assert "fewer partitions" in result.advice


def test_too_few_tasks_for_tiny_is_gated() -> None:
    result = run(task_granularity, tiny_app(10, num_tasks=P.min_tasks_for_tiny - 1), P)
    assert result.severity == Severity.NONE


def long_app(median_ms: float, num_tasks: int = 2) -> object:
    stage = make_stage(
        8,
        num_tasks=num_tasks,
        executor_run_time_ms=round(median_ms * num_tasks),
        completion_time_ms=round(median_ms),
        distribution=make_distribution(executor_run_time_ms=median_ms),
    )
    return make_app(stages=[stage])


@pytest.mark.parametrize(
    ("median_min", "expected"),
    [
        (4.99, Severity.NONE),
        (5, Severity.LOW),
        (15, Severity.MODERATE),
        (29.99, Severity.MODERATE),
        (30, Severity.SEVERE),
        (60, Severity.CRITICAL),
    ],
)
def test_few_long_tasks(median_min: float, expected: Severity) -> None:
    result = run(task_granularity, long_app(median_min * MIN_MS), P)
    assert result.severity == expected


def test_few_long_tasks_suggestion_and_impact() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS), P)
    # 2 tasks x 60 min = 120 min of work: 120 one-minute tasks, at least 2 x 8 slots
    assert "suggest 120 partitions" in result.title
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx(6 * 1.0)  # 6 idle slots for an hour
    assert "Repartition" in result.advice


def test_as_many_tasks_as_slots_is_one_wave() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS, num_tasks=8), P)
    assert result.severity == Severity.CRITICAL
    assert result.impact is not None and result.impact.core_hours == 0


def test_a_none_title_does_not_read_like_a_problem() -> None:
    # One 5-minute wave: judged (as many tasks as slots) but below the long-task threshold.
    result = task_granularity.evaluate(long_app(1 * MIN_MS, num_tasks=8), P)
    assert result.severity == Severity.NONE
    assert "suggest" not in result.title and "within limits" in result.title
    assert "in the 1 stage judged (" in result.title and "task slots)" in result.title


def test_counts_in_titles_agree_with_their_nouns() -> None:
    from heuristics.stats import fmt_count

    assert [fmt_count(n, "task slot") for n in (0, 1, 2)] == [
        "0 task slots",
        "1 task slot",
        "2 task slots",
    ]
    result = task_granularity.evaluate(tiny_app(3), P)
    assert "(tiny tasks, " in result.title and "(s)" not in result.title


def test_more_tasks_than_slots_is_not_few() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS, num_tasks=9), P)
    assert result.severity == Severity.NONE
    assert result.title.startswith("No stage with")


def test_missing_distribution() -> None:
    result = run(task_granularity, make_app(stages=[make_stage()]), P)
    assert (result.severity, result.title) == (Severity.NONE, "No task distributions available")
