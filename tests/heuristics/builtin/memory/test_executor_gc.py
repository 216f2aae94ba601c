"""executor_gc: GC share of executor task time, capped by the GC time, with the heap to try."""

from __future__ import annotations

import pytest

from heuristics.builtin.memory import executor_gc
from heuristics.result import Severity
from tests.heuristics.builders import MIN_MS, make_app, make_driver, make_executor, make_stage, run

P = executor_gc.Params()
RUN_MS = 100 * MIN_MS


def gc_app(ratio: float) -> object:
    execs = [
        make_driver(total_gc_time_ms=10 * RUN_MS),  # the driver in cluster mode is ignored
        make_executor("1", total_duration_ms=RUN_MS, total_gc_time_ms=round(RUN_MS * ratio)),
        make_executor("2", total_duration_ms=RUN_MS, total_gc_time_ms=round(RUN_MS * ratio)),
    ]
    return make_app(executors=execs)


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.0799, Severity.NONE),
        (0.08, Severity.LOW),
        (0.0999, Severity.LOW),
        (0.1, Severity.MODERATE),
        (0.1499, Severity.MODERATE),
        (0.15, Severity.SEVERE),
        (0.1999, Severity.SEVERE),
        (0.2, Severity.CRITICAL),
        # a low GC share is no finding (over-provisioning is the executor memory finding's)
        (0.01, Severity.NONE),
        (0.0, Severity.NONE),
    ],
)
def test_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(executor_gc, gc_app(ratio), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    if expected > Severity.NONE:
        assert result.advice.startswith(executor_gc.ADVICE)
        # 8g executors: half as large again
        assert result.conf == (("spark.executor.memory", "12g"),)
    else:
        assert (result.advice, result.conf) == ("", ())


def test_impact_is_gc_core_hours() -> None:
    result = run(executor_gc, gc_app(0.2), P)
    assert result.impact is not None
    gc_ms = 2 * RUN_MS * 0.2
    assert result.impact.core_hours == pytest.approx(gc_ms / 3_600_000)
    assert result.impact.wall_seconds == pytest.approx(gc_ms / 1000 / 8)


def test_local_mode_uses_the_driver() -> None:
    driver = make_driver(total_duration_ms=RUN_MS, total_gc_time_ms=RUN_MS // 5, total_cores=2)
    app = make_app(executors=[driver], props={"spark.master": "local[2]"})
    result = run(executor_gc, app, P)
    # 20 min of GC on 2 cores: 10 min of wall allows MODERATE
    assert (result.pattern_severity, result.severity) == (Severity.CRITICAL, Severity.MODERATE)
    assert result.details is not None and result.details.rows[0][0] == "driver"
    # local mode: the driver's heap (1g by default) is the one to raise
    assert result.conf == (("spark.driver.memory", "1536m"),)


@pytest.mark.parametrize(
    ("run_ms", "severity"),
    [
        (16_000, Severity.LOW),  # 5 s of GC in a seconds-long application
        (100 * MIN_MS, Severity.MODERATE),  # 2 × 50 min of GC: 1.7 core-hours, 12.5 min of wall
        (400 * MIN_MS, Severity.SEVERE),  # 6.7 core-hours, 50 min of wall
        (2000 * MIN_MS, Severity.CRITICAL),  # 33 core-hours
    ],
)
def test_small_app_is_judged_and_capped_by_its_gc_time(run_ms: int, severity: Severity) -> None:
    execs = [
        make_executor("1", total_duration_ms=run_ms, total_gc_time_ms=run_ms // 2),
        make_executor("2", total_duration_ms=run_ms, total_gc_time_ms=run_ms // 2),
    ]
    result = run(executor_gc, make_app(executors=execs), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


def test_no_executors() -> None:
    result = run(executor_gc, make_app(executors=[]), P)
    assert (result.severity, result.title) == (Severity.NONE, "No executor metrics available")


def test_stage_totals_are_used_when_executor_totals_miss_gc() -> None:
    # the SHS can leave the local-mode driver's totalGCTime at 0 while stages report GC
    driver = make_driver(total_duration_ms=RUN_MS, total_gc_time_ms=0, total_cores=2)
    stages = [
        make_stage(0, executor_run_time_ms=RUN_MS, jvm_gc_time_ms=RUN_MS // 4),
        make_stage(1, executor_run_time_ms=RUN_MS, jvm_gc_time_ms=0),
    ]
    app = make_app(executors=[driver], stages=stages, props={"spark.master": "local[2]"})
    result = run(executor_gc, app, P)
    assert result.value == pytest.approx(0.125)
    assert result.severity == Severity.MODERATE
    assert result.details is not None
    assert result.details.rows == (("stage 0", RUN_MS, RUN_MS // 4, 0.25),)
