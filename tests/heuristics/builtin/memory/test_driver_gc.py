"""driver_gc: driver GC vs its task time (local mode) or the application duration (cluster)."""

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
    result = run(driver_gc, make_app(executors=execs, duration_ms=APP_MS), P)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    assert "application duration" in result.title


def test_local_mode_uses_driver_task_time() -> None:
    driver = make_driver(
        total_duration_ms=APP_MS // 2, total_gc_time_ms=APP_MS // 20, total_cores=2
    )
    app = make_app(executors=[driver], props={"spark.master": "local[2]"}, duration_ms=APP_MS)
    result = run(driver_gc, app, P)
    assert result.value == pytest.approx(0.1)
    assert result.severity == Severity.MODERATE
    assert "driver task time" in result.title
    assert result.impact is not None
    assert result.impact.wall_seconds == pytest.approx(APP_MS / 20 / 1000 / 2)


def test_short_app_is_gated() -> None:
    execs = [make_driver(total_gc_time_ms=MIN_MS), make_executor("1")]
    result = run(driver_gc, make_app(executors=execs, duration_ms=P.min_duration_ms - 1), P)
    assert result.severity == Severity.NONE
    assert "needed to judge driver GC" in result.title


def test_no_driver_entry() -> None:
    result = run(driver_gc, make_app(executors=[make_executor("1")]), P)
    assert result.severity == Severity.NONE
    assert result.title == "No driver entry in the executor list"
