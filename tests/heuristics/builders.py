"""Small builders for heuristic inputs with sensible defaults (like dr-elephant's fakes)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from heuristics.appdata import (
    AppData,
    ExecutorSummary,
    JobSummary,
    SqlExecutionSummary,
    StageSummary,
    TaskDistribution,
    TaskSummary,
)
from heuristics.contract import from_module
from heuristics.costcap import DEFAULT_COST_CAPS, CostCaps
from heuristics.params import param, params_view
from heuristics.result import HeuristicResult, Severity
from heuristics.thresholds import Thresholds

QUANTILES = tuple(i / 20 for i in range(21))
MIN_MS = 60_000
GIB = 1024**3
MIB = 1024**2


def run(
    module: ModuleType, app: AppData, params: Any = None, caps: CostCaps | None = DEFAULT_COST_CAPS
) -> HeuristicResult:
    """Evaluate one heuristic module and finish its outcome as the registry does (name,
    thresholds, severity capped by cost under ``caps`` (None: uncapped), advice, settings and
    impact only above NONE); errors propagate."""
    heuristic = from_module(module)
    params = heuristic.params_type() if params is None else params
    outcome = heuristic.evaluate(app, params)
    cap = None if caps is None else caps.allowed(outcome.impact)
    return outcome.to_result(heuristic.name, params_view(params), cap)


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


# --------------------------------------------------------------------------- test heuristics


def copy_module(module: types.ModuleType, **changes: object) -> types.ModuleType:
    """A copy of a heuristic module with some names changed (e.g. VERSION)."""
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    copy.__dict__.update(changes)
    return copy


@dataclasses.dataclass(frozen=True)
class FakeParams:
    """Params of the test heuristics."""

    ratio: Thresholds = param(Thresholds(1, 2, 3, 4), "a ratio (ascending)")


def fake_module(name: str, evaluate: object, **extra: object) -> types.ModuleType:
    """A heuristic module following the contract, around the given evaluate."""
    module = types.ModuleType(name, "A test heuristic.")
    module.__dict__.update(
        NAME=name,
        TITLE=name.title(),
        VERSION=1,
        INPUTS=frozenset({"stages"}),
        Params=FakeParams,
        evaluate=evaluate,
    )
    module.__dict__.update(extra)
    return module


def kitchen_sink_app() -> AppData:
    """An application on which every built-in heuristic fires."""
    dist = make_distribution(
        {
            "executor_run_time_ms": curve(MIN_MS, 2 * MIN_MS, 40 * MIN_MS),
            "input_bytes": curve(0, GIB, 30 * GIB),
        },
        scheduler_delay_ms=5,
    )
    stages = [
        make_stage(
            0,
            distribution=dist,
            memory_bytes_spilled=4 * GIB,
            disk_bytes_spilled=GIB,
            input_bytes=GIB,
            shuffle_read_bytes=GIB,
            shuffle_fetch_wait_ms=50 * MIN_MS,
            jvm_gc_time_ms=60 * MIN_MS,
        ),
        make_stage(1, status="FAILED", failure_reason="FetchFailed", num_failed_tasks=40),
        make_stage(1, attempt_id=1),
        make_stage(2, num_tasks=5000, distribution=make_distribution(executor_run_time_ms=20)),
    ]
    executors = [
        make_driver(total_gc_time_ms=30 * MIN_MS),
        make_executor(
            "1",
            total_gc_time_ms=20 * MIN_MS,
            peak_jvm_heap_bytes=7 * GIB,
            peak_jvm_offheap_bytes=GIB,
        ),
        make_executor("2", total_duration_ms=600 * MIN_MS, total_input_bytes=10 * GIB),
        make_executor("3", total_duration_ms=10 * MIN_MS),
    ]
    app = make_app(
        executors=executors,
        stages=stages,
        jobs=[make_job(0, status="FAILED"), make_job(1)],
        tasks=[
            make_task(1, status="FAILED", error_message="Container killed by YARN"),
            make_task(2, memory_bytes_spilled=GIB),
        ],
        props={
            "spark.serializer": "org.apache.spark.serializer.JavaSerializer",
            "spark.dynamicAllocation.enabled": "true",
        },
    )
    return dataclasses.replace(app, sql_status="ok", sql_executions=kitchen_sink_queries())


def kitchen_sink_queries() -> tuple[SqlExecutionSummary, ...]:
    """SQL executions on which every SQL check fires (task time from stage 0)."""
    from tests.heuristics.builtin.sql import plans as p

    udf = p.node(
        1,
        "BatchEvalPython",
        (2,),
        {"time to run Python workers": 90.0 * MIN_MS},
        {"Arguments": "[normalize(email#3)#10], [pythonUDF0#20]"},
    )
    small_files = p.execution(
        0, [p.node(0, "HashAggregate", (1,)), p.scan(1, files=5000, nbytes=5 * MIB)]
    )
    queries = [
        small_files,
        p.smj(20 * GIB, 3 * MIB),
        p.broadcast(300 * MIB, 1e6),
        p.nested_loop(1e5, 1e5),
        p.write(1200, 7 * MIB, shuffle_partitions=1200),
        p.filtered_scan(45, "(cast(event_date#13 as string) = 2024-06-15)"),
        p.execution(0, [p.node(0, "HashAggregate", (1,)), udf, p.scan(2)]),
        p.join(1e7, 1e5, 1e4),
        *p.kpi_queries(5),
    ]
    return tuple(q._replace(execution_id=i) for i, q in enumerate(queries))
