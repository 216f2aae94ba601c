"""shuffle_fetch_wait: fetch wait share of task time for shuffle-reading stages."""

from __future__ import annotations

import pytest

from heuristics.builtin.parallelism import shuffle_fetch_wait
from heuristics.result import Severity
from tests.heuristics.builders import GIB, MIN_MS, make_app, make_stage, run

P = shuffle_fetch_wait.Params()
RUN_MS = 100 * MIN_MS


def wait_app(ratio: float, run_ms: int = RUN_MS, read_bytes: int = GIB) -> object:
    stage = make_stage(
        6,
        executor_run_time_ms=run_ms,
        shuffle_read_bytes=read_bytes,
        shuffle_fetch_wait_ms=round(run_ms * ratio),
    )
    return make_app(stages=[stage, make_stage(1)])


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.0999, Severity.NONE),
        (0.1, Severity.LOW),
        (0.2, Severity.MODERATE),
        (0.2999, Severity.MODERATE),
        (0.3, Severity.SEVERE),
        (0.4999, Severity.SEVERE),
        (0.5, Severity.CRITICAL),
    ],
)
def test_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(shuffle_fetch_wait, wait_app(ratio), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    assert "tage 6 waited" in result.title
    assert result.stages == (((6, 0),) if expected > Severity.NONE else ())


def test_impact() -> None:
    result = run(shuffle_fetch_wait, wait_app(0.5), P)
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx(RUN_MS * 0.5 / 3_600_000)
    assert result.impact.wall_seconds == pytest.approx(RUN_MS * 0.5 / 1000 / 8)


@pytest.mark.parametrize(
    ("run_ms", "read_bytes", "severity"),
    [
        (1000, 1024, Severity.LOW),  # 0.9 s of waiting in a tiny stage: reported, LOW
        (10 * MIN_MS, GIB, Severity.LOW),  # 9 min of waiting: 0.15 core-hours, 68 s of wall
        (60 * MIN_MS, GIB, Severity.MODERATE),  # 0.9 core-hours, 405 s of wall
        (300 * MIN_MS, GIB, Severity.SEVERE),  # 4.5 core-hours, 34 min of wall
        (3000 * MIN_MS, GIB, Severity.CRITICAL),  # 45 core-hours
    ],
)
def test_small_stages_are_judged_and_capped_by_the_wait(
    run_ms: int, read_bytes: int, severity: Severity
) -> None:
    result = run(shuffle_fetch_wait, wait_app(0.9, run_ms, read_bytes), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


def test_no_shuffle() -> None:
    result = run(shuffle_fetch_wait, make_app(stages=[make_stage()]), P)
    assert (result.severity, result.title) == (Severity.NONE, "No stage read shuffle data")
