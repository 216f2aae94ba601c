"""executor_load_imbalance: busiest executor vs the median executor, capped by the idle time."""

from __future__ import annotations

import pytest

from heuristics.builtin.parallelism import executor_load_imbalance
from heuristics.result import Severity
from tests.heuristics.builders import GIB, MIN_MS, make_app, make_driver, make_executor, run

P = executor_load_imbalance.Params()
BASE_MS = 60 * MIN_MS


def imbalance_app(ratio: float) -> object:
    execs = [make_driver()] + [
        make_executor(str(i), total_duration_ms=BASE_MS) for i in range(1, 4)
    ]
    execs.append(make_executor("9", total_duration_ms=round(BASE_MS * ratio)))
    return make_app(executors=execs)


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (1.49, Severity.NONE),
        (1.5, Severity.LOW),
        (1.99, Severity.LOW),
        (2.0, Severity.MODERATE),
        (3.99, Severity.MODERATE),
        (4.0, Severity.SEVERE),
        (7.99, Severity.SEVERE),
        (8.0, Severity.CRITICAL),
    ],
)
def test_severity_by_task_time_ratio(ratio: float, expected: Severity) -> None:
    result = run(executor_load_imbalance, imbalance_app(ratio), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio)
    assert "xecutor 9 task time " in result.title  # the measure in words, not its key


def test_impact_counts_idle_capacity() -> None:
    result = run(executor_load_imbalance, imbalance_app(3.0), P)
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx(3 * 2 * BASE_MS / 3_600_000)
    assert result.impact.wall_seconds == pytest.approx(2 * BASE_MS / 1000 / 4)


def test_bytes_imbalance() -> None:
    execs = [
        make_executor("1", total_duration_ms=MIN_MS, total_input_bytes=GIB),
        make_executor("2", total_duration_ms=MIN_MS, total_input_bytes=GIB),
        make_executor("3", total_duration_ms=MIN_MS, total_input_bytes=5 * GIB),
    ]
    result = run(executor_load_imbalance, make_app(executors=execs), P)
    assert result.pattern_severity == Severity.SEVERE
    assert result.details is not None and result.details.rows[1][0] == "input_bytes"
    assert result.title.startswith("Executor 3 input 5.0× median") and "_bytes" not in result.title
    # the executors' task time is even: the byte imbalance cost no time, a LOW note
    assert result.impact is not None and result.impact.core_hours == 0
    assert result.severity == Severity.LOW


@pytest.mark.parametrize(
    ("executors", "words"),
    [
        # Local mode: never "0 executor(s)" beside a page that counts the driver as 1 executor.
        ([make_driver(total_duration_ms=10 * BASE_MS)], "only the driver ran tasks"),
        ([make_driver(), make_executor("1", total_duration_ms=10 * BASE_MS)], "only 1 executor"),
    ],
)
def test_needs_two_executors(executors: list, words: str) -> None:
    result = run(executor_load_imbalance, make_app(executors=executors), P)
    assert result.severity == Severity.NONE
    assert words in result.title and "at least 2 needed" in result.title
    assert "0 executor" not in result.title


@pytest.mark.parametrize(
    ("base_ms", "severity"),
    [
        (1000, Severity.LOW),  # seconds of work: still reported
        (2 * MIN_MS, Severity.LOW),  # 0.8 core-hours idle, 4 min of wall
        (3 * MIN_MS, Severity.MODERATE),  # 1.2 core-hours, 6 min of wall
        (10 * MIN_MS, Severity.SEVERE),  # 4 core-hours, 20 min of wall
        (60 * MIN_MS, Severity.CRITICAL),  # 24 core-hours, 2 h of wall
    ],
)
def test_little_work_is_judged_and_capped_by_its_cost(base_ms: int, severity: Severity) -> None:
    execs = [make_executor(str(i), total_duration_ms=base_ms) for i in range(1, 4)]
    execs.append(make_executor("9", total_duration_ms=9 * base_ms))
    result = run(executor_load_imbalance, make_app(executors=execs), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity
