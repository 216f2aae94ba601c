"""stage_failures: failed stage attempts, weighted down when a retry recovered them."""

from __future__ import annotations

import pytest

from heuristics.builtin.failures import stage_failures
from heuristics.result import Severity
from tests.heuristics.builders import make_app, make_stage, run

P = stage_failures.Params()


def failures_app(unrecovered: int, recovered: int) -> object:
    stages = []
    for i in range(unrecovered):
        stages.append(make_stage(i, status="FAILED", failure_reason=f"boom {i}\n\tat x"))
    for i in range(100, 100 + recovered):
        stages.append(make_stage(i, status="FAILED", failure_reason="FetchFailed(...)"))
        stages.append(make_stage(i, attempt_id=1, status="COMPLETE"))
    stages.append(make_stage(500))
    return make_app(stages=stages)


@pytest.mark.parametrize(
    ("unrecovered", "recovered", "expected"),
    [
        (0, 0, Severity.NONE),
        (0, 1, Severity.LOW),
        (0, 2, Severity.MODERATE),
        (1, 0, Severity.MODERATE),
        (1, 1, Severity.MODERATE),
        (2, 0, Severity.SEVERE),
        (3, 1, Severity.SEVERE),
        (4, 0, Severity.CRITICAL),
    ],
)
def test_severity_by_weighted_count(unrecovered: int, recovered: int, expected: Severity) -> None:
    result = run(stage_failures, failures_app(unrecovered, recovered), P)
    assert result.pattern_severity == expected
    assert result.value == pytest.approx(unrecovered + 0.5 * recovered)


def test_details_carry_reasons() -> None:
    result = run(stage_failures, failures_app(1, 1), P)
    assert result.title == "2 failed stage attempts (1 recovered by a retry)"
    assert result.details is not None
    rows = {row[0]: row for row in result.details.rows}
    # The whole reason, so the page can show the line naming the error first.
    assert rows[0][3] is False and rows[0][5] == "boom 0\n\tat x"
    assert rows[100][3] is True and rows[100][5] == "FetchFailed(...)"


def test_recovered_weight_is_configurable() -> None:
    heavy = stage_failures.Params(recovered_weight=1.0)
    assert run(stage_failures, failures_app(0, 1), heavy).severity == Severity.MODERATE


def test_no_stages() -> None:
    assert run(stage_failures, make_app(), P).title == "No stages recorded"


def test_failed_attempts_are_listed_unrecovered_first_and_capped_by_their_time() -> None:
    stages = [
        make_stage(1, status="FAILED", executor_run_time_ms=1000, completion_time_ms=2000),
        make_stage(1, attempt_id=1),
        make_stage(2, status="FAILED", executor_run_time_ms=500, completion_time_ms=1000),
    ]
    result = run(stage_failures, make_app(stages=stages), P)
    assert result.stages == ((2, 0), (1, 0))  # stage 2 never completed
    assert (result.pattern_severity, result.severity) == (Severity.MODERATE, Severity.LOW)
