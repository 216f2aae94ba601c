"""stage_skew: max/median task run time per stage, gated by stage and task duration."""

from __future__ import annotations

import pytest

from heuristics.builtin.parallelism import stage_skew
from heuristics.result import Severity
from tests.heuristics.builders import (
    AROUND_2_4_8_16,
    MIN_MS,
    curve,
    make_app,
    make_distribution,
    make_stage,
    run,
)

P = stage_skew.Params()
MEDIAN_MS = 2 * MIN_MS


def skew_app(ratio: float, duration_ms: int = 10 * MIN_MS, **metrics: tuple) -> object:
    dist = make_distribution(
        {"executor_run_time_ms": curve(MIN_MS, MEDIAN_MS, MEDIAN_MS * ratio), **metrics}
    )
    stage = make_stage(3, distribution=dist, completion_time_ms=duration_ms)
    return make_app(stages=[stage])


@pytest.mark.parametrize(
    ("ratio", "expected"),
    AROUND_2_4_8_16,
)
def test_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(stage_skew, skew_app(ratio), P)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    assert result.title.startswith("Stage 3 max task")
    assert (result.advice != "") == (expected > Severity.LOW)
    assert (result.impact is None) == (expected == Severity.NONE)


def test_title_and_impact() -> None:
    result = run(stage_skew, skew_app(8.0), P)
    assert result.title == "Stage 3 max task 8.0× median (16.0 min vs 2.0 min)"
    assert result.impact is not None
    straggler_s = 7 * MEDIAN_MS / 1000
    assert result.impact.wall_seconds == pytest.approx(straggler_s)
    # 2 executors x 4 cores: 7 slots idle while the straggler runs
    assert result.impact.core_hours == pytest.approx(straggler_s * 7 / 3600)


@pytest.mark.parametrize(
    ("metrics", "cause"),
    [
        ({"input_bytes": curve(1, 100, 1000)}, "data skew"),
        ({"shuffle_read_bytes": curve(1, 100, 250)}, "data skew"),
        ({"input_bytes": curve(1, 100, 150)}, "compute skew"),
        ({}, "compute skew"),
    ],
)
def test_cause(metrics: dict, cause: str) -> None:
    result = run(stage_skew, skew_app(8.0, **metrics), P)
    assert result.details is not None
    row = dict(zip(result.details.columns, result.details.rows[0], strict=True))
    assert row["cause"] == cause
    assert row["stage"] == 3


def test_short_stage_is_gated() -> None:
    result = run(stage_skew, skew_app(16.0, duration_ms=P.min_stage_duration_ms - 1), P)
    assert result.severity == Severity.NONE
    assert "No stage long enough" in result.title
    assert result.impact is None


def test_short_max_task_is_gated() -> None:
    dist = make_distribution({"executor_run_time_ms": curve(1, 1000, 59_000)})
    app = make_app(stages=[make_stage(distribution=dist)])
    assert run(stage_skew, app, P).severity == Severity.NONE


def test_small_gates_let_small_stages_through() -> None:
    dist = make_distribution({"executor_run_time_ms": curve(1, 1000, 9000)})
    app = make_app(stages=[make_stage(distribution=dist, completion_time_ms=20_000)])
    small = stage_skew.Params(min_stage_duration_ms=1000, min_max_task_ms=1000)
    assert run(stage_skew, app, small).severity == Severity.SEVERE


def test_missing_distribution() -> None:
    result = run(stage_skew, make_app(stages=[make_stage()]), P)
    assert result.severity == Severity.NONE
    assert result.title == "No task distributions available"


def test_zero_median_is_safe() -> None:
    dist = make_distribution({"executor_run_time_ms": curve(0, 0, 2 * MIN_MS)})
    result = run(stage_skew, make_app(stages=[make_stage(distribution=dist)]), P)
    assert result.severity == Severity.CRITICAL
    assert result.to_dict()["value"] is None  # infinity is not valid JSON


def test_falls_back_to_duration_metric() -> None:
    dist = make_distribution({"duration_ms": curve(MIN_MS, MEDIAN_MS, MEDIAN_MS * 4)})
    result = run(stage_skew, make_app(stages=[make_stage(distribution=dist)]), P)
    assert result.severity == Severity.MODERATE
