"""driver_gc: driver GC vs the application duration in cluster mode; local mode is executor GC."""

from __future__ import annotations

import pytest

from heuristics.builtin.memory import driver_gc
from heuristics.result import Severity
from tests.heuristics.builders import MIN_MS, make_app, make_driver, make_executor, run

P = driver_gc.Params()
APP_MS = 100 * MIN_MS


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.0799, Severity.NONE),
        (0.08, Severity.LOW),
        (0.1, Severity.MODERATE),
        (0.1499, Severity.MODERATE),
        (0.15, Severity.SEVERE),
        (0.2, Severity.CRITICAL),
    ],
)
def test_cluster_mode_uses_app_duration(ratio: float, expected: Severity) -> None:
    execs = [make_driver(total_gc_time_ms=round(APP_MS * ratio)), make_executor("1")]
    result = run(driver_gc, make_app(executors=execs, duration_ms=APP_MS), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    assert "application duration" in result.title
    if expected > Severity.NONE:
        assert dict(result.conf) == {"spark.driver.memory": "1536m"}  # 1g × 1.5


def test_local_mode_is_left_to_executor_gc() -> None:
    driver = make_driver(
        total_duration_ms=APP_MS // 2, total_gc_time_ms=APP_MS // 20, total_cores=2
    )
    app = make_app(executors=[driver], props={"spark.master": "local[2]"}, duration_ms=APP_MS)
    result = run(driver_gc, app, P)
    assert result.severity == Severity.NONE
    assert "executor GC" in result.title


@pytest.mark.parametrize(
    ("app_ms", "severity"),
    [
        (10_000, Severity.LOW),  # 2 s of driver GC in a 10 s application: a CRITICAL pattern
        (100 * MIN_MS, Severity.SEVERE),  # 20 min of GC pauses the whole application
        (400 * MIN_MS, Severity.CRITICAL),  # 80 min
    ],
)
def test_short_app_is_judged_and_capped(app_ms: int, severity: Severity) -> None:
    execs = [make_driver(total_gc_time_ms=app_ms // 5), make_executor("1")]
    result = run(driver_gc, make_app(executors=execs, duration_ms=app_ms), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


def test_no_driver_entry() -> None:
    result = run(driver_gc, make_app(executors=[make_executor("1")]), P)
    assert result.severity == Severity.NONE
    assert result.title == "No driver entry in the executor list"
