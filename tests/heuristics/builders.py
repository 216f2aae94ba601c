"""Small builders for heuristic inputs with sensible defaults (like dr-elephant's fakes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from heuristics import from_module
from heuristics.base import (
    AppData,
    ExecutorSummary,
    HeuristicResult,
    JobSummary,
    Severity,
    StageSummary,
    TaskDistribution,
    TaskSummary,
    params_view,
)

QUANTILES = tuple(i / 20 for i in range(21))
MIN_MS = 60_000
GIB = 1024**3
MIB = 1024**2


def run(module: ModuleType, app: AppData, params: Any = None) -> HeuristicResult:
    """Evaluate one heuristic module and finish its outcome as the registry does (name,
    thresholds, advice only above LOW, impact only above NONE); errors propagate."""
    heuristic = from_module(module)
    params = heuristic.params_type() if params is None else params
    return heuristic.evaluate(app, params).to_result(heuristic.name, params_view(params))


def curve(min_value: float, median_value: float, max_value: float) -> tuple[float, ...]:
    """A 21-point quantile curve: linear from min to median, then to max at the last point."""
    lower = [min_value + (median_value - min_value) * i / 10 for i in range(11)]
    upper = [median_value] * 9 + [max_value]
    return tuple(lower + upper)


def make_distribution(
    metrics: Mapping[str, Sequence[float]] | None = None, **flat: float
) -> TaskDistribution:
    """A distribution; `flat` gives constant curves, e.g. executor_run_time_ms=1000."""
    data: dict[str, tuple[float, ...]] = {k: (float(v),) * 21 for k, v in flat.items()}
    for key, values in (metrics or {}).items():
        data[key] = tuple(float(v) for v in values)
    return TaskDistribution(quantiles=QUANTILES, metrics=data)


def make_executor(executor_id: str = "1", **kw: object) -> ExecutorSummary:
    """An executor that ran 1 h of tasks with no GC and 4 cores."""
    values: dict[str, object] = {
        "executor_id": executor_id,
        "is_driver": executor_id == "driver",
        "host": "host-1",
        "total_cores": 4,
        "max_memory_bytes": 2 * GIB,
        "add_time_ms": 0,
        "remove_time_ms": None,
        "remove_reason": None,
        "total_duration_ms": 60 * MIN_MS,
        "total_gc_time_ms": 0,
        "total_tasks": 100,
        "failed_tasks": 0,
        "completed_tasks": 100,
        "total_input_bytes": 0,
        "total_shuffle_read_bytes": 0,
        "total_shuffle_write_bytes": 0,
        "peak_jvm_heap_bytes": None,
        "peak_jvm_offheap_bytes": None,
    }
    values.update(kw)
    return ExecutorSummary(**values)  # type: ignore[arg-type]


def make_driver(**kw: object) -> ExecutorSummary:
    """The driver entry (runs no tasks unless told otherwise)."""
    values: dict[str, object] = {"total_duration_ms": 0, "total_tasks": 0, "completed_tasks": 0}
    values.update(kw)
    return make_executor("driver", **values)


def make_stage(stage_id: int = 0, **kw: object) -> StageSummary:
    """A COMPLETE 100-task stage that ran 10 minutes."""
    values: dict[str, object] = {
        "stage_id": stage_id,
        "attempt_id": 0,
        "name": f"collect at job.py:{stage_id}",
        "status": "COMPLETE",
        "num_tasks": 100,
        "num_complete_tasks": 100,
        "num_failed_tasks": 0,
        "num_killed_tasks": 0,
        "submission_time_ms": 0,
        "first_task_launched_time_ms": 0,
        "completion_time_ms": 10 * MIN_MS,
        "executor_run_time_ms": 100 * MIN_MS,
        "executor_cpu_time_ns": 0,
        "jvm_gc_time_ms": 0,
        "input_bytes": 0,
        "output_bytes": 0,
        "shuffle_read_bytes": 0,
        "shuffle_write_bytes": 0,
        "shuffle_fetch_wait_ms": 0,
        "memory_bytes_spilled": 0,
        "disk_bytes_spilled": 0,
        "failure_reason": None,
        "distribution": None,
    }
    values.update(kw)
    return StageSummary(**values)  # type: ignore[arg-type]


def make_job(job_id: int = 0, **kw: object) -> JobSummary:
    """A SUCCEEDED job of stage 0."""
    values: dict[str, object] = {
        "job_id": job_id,
        "name": f"collect at job.py:{job_id}",
        "status": "SUCCEEDED",
        "submission_time_ms": 0,
        "completion_time_ms": 10 * MIN_MS,
        "num_tasks": 100,
        "num_failed_tasks": 0,
        "num_failed_stages": 0,
        "stage_ids": (0,),
    }
    values.update(kw)
    return JobSummary(**values)  # type: ignore[arg-type]


def make_task(task_id: int = 0, **kw: object) -> TaskSummary:
    """A SUCCESS task of stage 0."""
    values: dict[str, object] = {
        "stage_id": 0,
        "stage_attempt_id": 0,
        "task_id": task_id,
        "index": task_id,
        "attempt": 0,
        "executor_id": "1",
        "status": "SUCCESS",
        "duration_ms": 1000,
        "executor_run_time_ms": 900,
        "input_bytes": 0,
        "shuffle_read_bytes": 0,
        "memory_bytes_spilled": 0,
        "disk_bytes_spilled": 0,
        "error_message": None,
    }
    values.update(kw)
    return TaskSummary(**values)  # type: ignore[arg-type]


def make_app(
    *,
    executors: Sequence[ExecutorSummary] | None = None,
    stages: Sequence[StageSummary] = (),
    jobs: Sequence[JobSummary] = (),
    tasks: Sequence[TaskSummary] = (),
    props: Mapping[str, str] | None = None,
    duration_ms: int = 60 * MIN_MS,
) -> AppData:
    """A well-configured YARN app with a driver and two 4-core executors unless told otherwise."""
    if executors is None:
        executors = (make_driver(), make_executor("1"), make_executor("2"))
    properties = {
        "spark.master": "yarn",
        "spark.yarn.queue": "etl",
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.executor.cores": "4",
        "spark.executor.memory": "8g",
    }
    properties.update(props or {})
    return AppData(
        app_id="application_1_0001",
        attempt_id="1",
        name="test-app",
        user="alice",
        start_time_ms=0,
        end_time_ms=duration_ms,
        duration_ms=duration_ms,
        spark_properties=properties,
        executors=tuple(executors),
        jobs=tuple(jobs),
        stages=tuple(stages),
        tasks=tuple(tasks),
    )


#: Values just below and at each level of the common 2 / 4 / 8 / 16 ratio thresholds.
AROUND_2_4_8_16: list[tuple[float, Severity]] = [
    (1.99, Severity.NONE),
    (2.0, Severity.LOW),
    (3.99, Severity.LOW),
    (4.0, Severity.MODERATE),
    (7.99, Severity.MODERATE),
    (8.0, Severity.SEVERE),
    (15.99, Severity.SEVERE),
    (16.0, Severity.CRITICAL),
]
