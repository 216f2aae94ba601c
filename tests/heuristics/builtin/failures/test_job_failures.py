"""job_failures: share of failed jobs; any failed job is at least MODERATE, a failed last job SEVERE."""

from __future__ import annotations

import pytest

from heuristics.builtin.failures import job_failures
from heuristics.result import Severity
from tests.heuristics.builders import MIN_MS, make_app, make_job, make_stage, run

P = job_failures.Params()


def jobs_app(failed: int, total: int) -> object:
    jobs = [
        make_job(i, status="FAILED" if i < failed else "SUCCEEDED", stage_ids=(i,))
        for i in range(total)
    ]
    stages = [make_stage(i, executor_run_time_ms=6 * MIN_MS) for i in range(total)]
    return make_app(jobs=jobs, stages=stages)


@pytest.mark.parametrize(
    ("failed", "total", "expected"),
    [
        (0, 10, Severity.NONE),
        (1, 20, Severity.MODERATE),  # below the low rate, still a lost result
        (1, 10, Severity.MODERATE),
        (2, 10, Severity.MODERATE),
        (3, 10, Severity.MODERATE),
        (4, 10, Severity.MODERATE),
        (5, 10, Severity.CRITICAL),
        (1, 1, Severity.CRITICAL),
    ],
)
def test_severity_by_rate(failed: int, total: int, expected: Severity) -> None:
    result = run(job_failures, jobs_app(failed, total), P)
    assert result.severity == expected
    assert result.value == pytest.approx(failed / total)
    assert result.title.startswith(f"{failed} of {total} jobs failed")


def test_details_and_impact() -> None:
    result = run(job_failures, jobs_app(2, 4), P)
    assert result.details is not None
    assert [row[0] for row in result.details.rows] == [0, 1]
    assert result.impact is not None
    assert result.impact.wall_seconds == pytest.approx(2 * 10 * 60)
    assert result.impact.core_hours == pytest.approx(2 * 6 / 60)


def test_no_jobs() -> None:
    result = run(job_failures, make_app(), P)
    assert (result.severity, result.title) == (Severity.NONE, "No jobs recorded")


@pytest.mark.parametrize(
    ("failed_index", "expected"), [(0, Severity.MODERATE), (9, Severity.SEVERE)]
)
def test_failed_last_job_means_failed_application(failed_index: int, expected: Severity) -> None:
    jobs = [
        make_job(i, status="FAILED" if i == failed_index else "SUCCEEDED", stage_ids=(i,))
        for i in range(10)
    ]
    result = run(job_failures, make_app(jobs=jobs), P)
    assert result.severity == expected
    assert ("the last job (9) failed" in result.title) == (failed_index == 9)


def test_a_lost_result_is_not_capped_by_its_cost() -> None:
    """A failed job lost its result: a seconds-long application whose last job failed stays
    SEVERE."""
    jobs = [make_job(i) for i in range(4)]
    jobs.append(make_job(4, status="FAILED", stage_ids=(1,), completion_time_ms=2000))
    stages = [make_stage(0), make_stage(1, status="FAILED", executor_run_time_ms=1500)]
    result = run(job_failures, make_app(jobs=jobs, stages=stages, duration_ms=7000), P)
    assert result.severity == Severity.SEVERE and result.cost_cap is None
    assert result.impact is not None and result.impact.core_hours == pytest.approx(1500 / 3_600_000)
    assert result.stages == ((1, 0),)
