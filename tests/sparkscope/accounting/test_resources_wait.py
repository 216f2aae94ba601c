"""Resource accounting's waits on hand-built applications: the driver-only time (the application's
duration less the union of its jobs), the wait for the first executor and each stage's wait for
its first task."""

from __future__ import annotations

import pytest

from heuristics.appdata import JobSummary
from sparkscope.accounting.resources import compute_resources
from tests.sparkscope.accounting.conftest import DRIVER_ONLY, S, app, driver, executor, stage


def job(job_id: int, submit_ms: int | None, complete_ms: int | None) -> JobSummary:
    """A job covering [submit_ms, complete_ms]."""
    return JobSummary(
        job_id=job_id,
        name=f"job {job_id}",
        status="SUCCEEDED",
        submission_time_ms=submit_ms,
        completion_time_ms=complete_ms,
        num_tasks=1,
        num_failed_tasks=0,
        num_failed_stages=0,
        stage_ids=(),
    )


def test_driver_only_application() -> None:
    r = compute_resources(DRIVER_ONLY)
    assert r.used_core_hours == 0
    assert r.core_efficiency == 0
    assert r.wait.driver_only_s == pytest.approx(600)
    assert r.wait.to_first_executor_s is None
    assert r.wait.per_stage == ()
    assert r.wait.stage_scheduling_delay_s == 0


@pytest.mark.parametrize(
    ("jobs", "driver_only_s"),
    [
        pytest.param((), 60, id="no-jobs"),
        pytest.param((job(0, 10 * S, 20 * S), job(1, 30 * S, 40 * S)), 40, id="disjoint"),
        pytest.param((job(0, 10 * S, 30 * S), job(1, 15 * S, 40 * S)), 30, id="overlapping"),
        pytest.param((job(0, 10 * S, 50 * S), job(1, 20 * S, 30 * S)), 20, id="nested"),
        pytest.param((job(0, 10 * S, 20 * S), job(1, 20 * S, 30 * S)), 40, id="touching"),
        pytest.param((job(0, 50 * S, None),), 50, id="open-until-app-end"),
        pytest.param((job(0, -5 * S, 10 * S), job(1, 55 * S, 90 * S)), 45, id="clipped-to-app"),
        pytest.param((job(0, None, 30 * S),), 60, id="no-submission-ignored"),
        pytest.param(
            (
                job(0, 40 * S, 50 * S),
                job(1, 10 * S, 20 * S),
                job(2, 15 * S, 30 * S),
                job(3, 45 * S, 47 * S),
                job(4, 55 * S, None),
            ),
            25,
            id="unsorted-mix",
        ),
    ],
)
def test_driver_only_time_is_duration_minus_union_of_jobs(
    jobs: tuple[JobSummary, ...], driver_only_s: float
) -> None:
    r = compute_resources(app((driver(), executor("1")), jobs=jobs, duration_ms=60 * S))
    assert r.wait.driver_only_s == pytest.approx(driver_only_s)


def test_wait_to_first_executor_and_per_stage() -> None:
    data = app(
        (driver(add_ms=1 * S), executor("1", add_ms=9 * S), executor("2", add_ms=7 * S)),
        stages=(
            stage(0, submit_ms=10 * S, first_task_ms=12 * S),
            stage(1, attempt_id=1, submit_ms=20 * S, first_task_ms=20 * S + 500),
            stage(2, submit_ms=30 * S, first_task_ms=None),
            stage(3, submit_ms=None, first_task_ms=None),
        ),
        start_ms=0,
    )
    wait = compute_resources(data).wait
    assert wait.to_first_executor_s == pytest.approx(7)
    assert [(w.stage_id, w.attempt_id) for w in wait.per_stage] == [(0, 0), (1, 1)]
    assert [w.wait_s for w in wait.per_stage] == pytest.approx([2, 0.5])
    assert wait.stage_scheduling_delay_s == pytest.approx(2.5)
