"""task_failures: failed task share and classified causes."""

from __future__ import annotations

import pytest

from heuristics.builtin.failures import task_failures
from heuristics.result import Severity
from tests.heuristics.builders import make_app, make_stage, make_task, run

P = task_failures.Params()


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("java.lang.OutOfMemoryError: Java heap space", task_failures.OOM),
        ("java.lang.OutOfMemoryError: GC overhead limit exceeded", task_failures.OOM),
        (
            "Container killed by YARN for exceeding memory limits. 5.5 GB of 5.5 GB",
            task_failures.CONTAINER,
        ),
        ("ExecutorLostFailure ... exit code: 137", task_failures.CONTAINER),
        ("Container exited with a non-zero exit code 143. Killed", task_failures.CONTAINER),
        ("FetchFailed(BlockManagerId(1, host, 7337), shuffleId=0)", task_failures.FETCH),
        (
            "org.apache.spark.shuffle.MetadataFetchFailedException: "
            "Missing an output location for shuffle 3",
            task_failures.FETCH,
        ),
        ("ValueError: bad row 17", task_failures.OTHER),
        ("Executor exited: EXITCODE=143 (reason)", task_failures.CONTAINER),
        ("exit code 1437 while reading row 143x", task_failures.OTHER),
        ("FetchFailed ... Caused by: java.lang.OutOfMemoryError", task_failures.OOM),
        ("ExecutorLostFailure exit status: 137\nFetchFailed", task_failures.CONTAINER),
        (None, task_failures.OTHER),
    ],
)
def test_classify(message: str | None, cause: str) -> None:
    assert task_failures.classify(message) == cause


def rate_app(failed: int, complete: int) -> object:
    stage = make_stage(num_failed_tasks=failed, num_complete_tasks=complete)
    return make_app(stages=[stage])


@pytest.mark.parametrize(
    ("failed", "complete", "expected"),
    [
        (0, 1000, Severity.NONE),
        (1, 999, Severity.LOW),  # any failure is a note
        (20, 980, Severity.LOW),
        (49, 951, Severity.LOW),
        (50, 950, Severity.MODERATE),
        (100, 900, Severity.SEVERE),
        (199, 801, Severity.SEVERE),
        (200, 800, Severity.CRITICAL),
    ],
)
def test_severity_by_rate(failed: int, complete: int, expected: Severity) -> None:
    result = run(task_failures, rate_app(failed, complete), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(failed / (failed + complete))
    assert result.stages == (((0, 0),) if failed else ())


@pytest.mark.parametrize(
    ("run_min", "severity"),
    [
        (100, Severity.LOW),  # 200 failed attempts of 6 s: 0.3 core-hours
        (1000, Severity.MODERATE),  # of 1 min: 3.3 core-hours
        (10_000, Severity.CRITICAL),  # of 10 min: 33 core-hours
    ],
)
def test_failed_attempts_are_capped_by_their_run_time(run_min: int, severity: Severity) -> None:
    stage = make_stage(
        num_failed_tasks=200, num_complete_tasks=800, executor_run_time_ms=run_min * 60_000
    )
    result = run(task_failures, make_app(stages=[stage]), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


@pytest.mark.parametrize(
    ("message", "props", "conf"),
    [
        ("java.lang.OutOfMemoryError: Java heap space", {}, {"spark.executor.memory": "12g"}),
        (
            "java.lang.OutOfMemoryError: Java heap space",
            {"spark.master": "local[4]", "spark.driver.memory": "2g"},
            {"spark.driver.memory": "3g"},
        ),
        (
            "Container killed by YARN for exceeding memory limits",
            {"spark.executor.memoryOverhead": "2g"},
            {"spark.executor.memoryOverhead": "3g"},
        ),
        # the default overhead (10% of 8g = 819 MiB) becomes at least 1 GiB
        (
            "Container killed by YARN for exceeding memory limits",
            {},
            {"spark.executor.memoryOverhead": "1536m"},
        ),
        ("FetchFailed(null, shuffleId=1)", {}, {}),
    ],
)
def test_memory_causes_suggest_settings(message: str, props: dict, conf: dict) -> None:
    task = make_task(1, status="FAILED", error_message=message)
    stage = make_stage(num_failed_tasks=1, num_complete_tasks=99)
    result = run(task_failures, make_app(stages=[stage], tasks=[task], props=props), P)
    assert dict(result.conf) == conf


def test_causes_in_details_and_advice() -> None:
    tasks = [
        make_task(
            1,
            status="FAILED",
            executor_run_time_ms=60_000,
            error_message="java.lang.OutOfMemoryError: Java heap space\n\tat foo",
        ),
        make_task(
            2,
            status="FAILED",
            executor_run_time_ms=None,
            duration_ms=30_000,
            error_message="FetchFailed(null, shuffleId=1)",
        ),
        make_task(3, status="FAILED", executor_run_time_ms=0, error_message="OutOfMemoryError"),
        make_task(4, status="SUCCESS", error_message=None),
    ]
    stage = make_stage(num_failed_tasks=15, num_complete_tasks=85)
    result = run(task_failures, make_app(stages=[stage], tasks=tasks), P, caps=None)
    assert result.severity == Severity.SEVERE
    assert (
        result.title
        == "15 of 100 task attempts failed (15.0%); causes: out of memory, fetch failure"
    )
    assert result.details is not None
    assert [(r[0], r[1]) for r in result.details.rows] == [
        ("out of memory", 2),
        ("fetch failure", 1),
    ]
    # The whole message is kept; the page shows its root-cause line first.
    assert result.details.rows[0][4] == "java.lang.OutOfMemoryError: Java heap space\n\tat foo"
    assert task_failures.CAUSE_ADVICE[task_failures.OOM] in result.advice
    assert task_failures.CAUSE_ADVICE[task_failures.FETCH] in result.advice
    assert task_failures.CAUSE_ADVICE[task_failures.CONTAINER] not in result.advice
    assert result.impact is not None
    # 15 failed attempts of a 100-minute stage of 100 tasks: 15 min, more than the stored 90 s
    assert result.impact.core_hours == pytest.approx(15 / 60)


@pytest.mark.parametrize(
    ("stages", "title"),
    [
        ([], "No stages recorded"),
        ([make_stage(num_complete_tasks=0)], "No finished tasks recorded"),
    ],
)
def test_missing_data(stages: list, title: str) -> None:
    result = run(task_failures, make_app(stages=stages), P)
    assert (result.severity, result.title) == (Severity.NONE, title)
