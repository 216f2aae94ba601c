"""Hand-built applications for the resource accounting tests (test_resources.py,
test_resources_wait.py): executors, the driver, stages and applications, with their units."""

from __future__ import annotations

from heuristics.appdata import AppData, ExecutorSummary, JobSummary, StageSummary
from tests.heuristics.builders import make_executor, make_stage

S = 1000
MIN = 60 * S
HOUR = 60 * MIN
MIB = 1024**2
GIB = 1024**3


def executor(
    executor_id: str = "1",
    *,
    cores: int = 4,
    add_ms: int | None = 0,
    remove_ms: int | None = None,
    heap_bytes: int | None = None,
    offheap_bytes: int | None = None,
    tasks: int = 10,
) -> ExecutorSummary:
    """An executor (or the driver when executor_id is "driver") with its lifetime and peaks."""
    return make_executor(
        executor_id,
        total_cores=cores,
        max_memory_bytes=GIB,
        add_time_ms=add_ms,
        remove_time_ms=remove_ms,
        remove_reason=None if remove_ms is None else "idle",
        total_duration_ms=0,
        total_tasks=tasks,
        completed_tasks=tasks,
        peak_jvm_heap_bytes=heap_bytes,
        peak_jvm_offheap_bytes=offheap_bytes,
    )


def driver(**kw: object) -> ExecutorSummary:
    """The driver entry; runs no tasks unless told so."""
    values: dict[str, object] = {"cores": 0, "tasks": 0}
    values.update(kw)
    return executor("driver", **values)  # type: ignore[arg-type]


def stage(
    stage_id: int = 0,
    *,
    attempt_id: int = 0,
    submit_ms: int | None = 0,
    first_task_ms: int | None = 0,
    run_ms: int = 0,
    cpu_ns: int = 0,
) -> StageSummary:
    """A completed one-task stage attempt with its totals and its launch times."""
    return make_stage(
        stage_id,
        attempt_id=attempt_id,
        name=f"stage {stage_id}",
        num_tasks=1,
        num_complete_tasks=1,
        submission_time_ms=submit_ms,
        first_task_launched_time_ms=first_task_ms,
        completion_time_ms=None if submit_ms is None else submit_ms + run_ms,
        executor_run_time_ms=run_ms,
        executor_cpu_time_ns=cpu_ns,
    )


def app(
    executors: tuple[ExecutorSummary, ...],
    *,
    stages: tuple[StageSummary, ...] = (),
    jobs: tuple[JobSummary, ...] = (),
    props: dict[str, str] | None = None,
    start_ms: int = 0,
    duration_ms: int = HOUR,
) -> AppData:
    """An application on YARN unless props say otherwise."""
    return AppData(
        app_id="application_1_0001",
        attempt_id="1",
        name="test-app",
        user="alice",
        start_time_ms=start_ms,
        end_time_ms=start_ms + duration_ms,
        duration_ms=duration_ms,
        spark_properties={"spark.master": "yarn", **(props or {})},
        executors=executors,
        jobs=jobs,
        stages=stages,
        tasks=(),
    )


DRIVER_ONLY = app((driver(),), duration_ms=10 * MIN)
