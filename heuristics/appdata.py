"""What a heuristic reads: one application's data as immutable, plain input types.

Named tuples: immutable like frozen dataclasses, and built from a stored tuple in one C call,
which matters when re-scoring thousands of applications (see sparkscope.analysis.inputs).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from heuristics.sparkconf import SparkConf


class TaskDistribution(NamedTuple):
    """SHS taskSummary: metric values at the given quantiles (usually 0, 0.05, ..., 1.0)."""

    quantiles: Sequence[float]
    metrics: Mapping[str, Sequence[float]]


#: The task-distribution metrics the heuristics read. The analysis loads only these from the
#: database (a stage's full summary holds about 25); a heuristic that needs another adds it here.
DISTRIBUTION_METRICS: tuple[str, ...] = (
    "duration_ms",
    "executor_run_time_ms",
    "scheduler_delay_ms",
    "input_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)


class ExecutorSummary(NamedTuple):
    """One executor (or the driver) as the SHS /allexecutors endpoint reports it."""

    executor_id: str
    is_driver: bool
    host: str | None
    total_cores: int
    max_memory_bytes: int
    add_time_ms: int | None
    remove_time_ms: int | None
    remove_reason: str | None
    total_duration_ms: int
    total_gc_time_ms: int
    total_tasks: int
    failed_tasks: int
    completed_tasks: int
    total_input_bytes: int
    total_shuffle_read_bytes: int
    total_shuffle_write_bytes: int
    peak_jvm_heap_bytes: int | None
    peak_jvm_offheap_bytes: int | None


class JobSummary(NamedTuple):
    """One Spark job."""

    job_id: int
    name: str
    status: str
    submission_time_ms: int | None
    completion_time_ms: int | None
    num_tasks: int
    num_failed_tasks: int
    num_failed_stages: int
    stage_ids: tuple[int, ...]


class StageSummary(NamedTuple):
    """One stage attempt with its aggregated metrics and optional task distribution."""

    stage_id: int
    attempt_id: int
    name: str
    status: str
    num_tasks: int
    num_complete_tasks: int
    num_failed_tasks: int
    num_killed_tasks: int
    submission_time_ms: int | None
    first_task_launched_time_ms: int | None
    completion_time_ms: int | None
    executor_run_time_ms: int
    executor_cpu_time_ns: int
    jvm_gc_time_ms: int
    input_bytes: int
    output_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    shuffle_fetch_wait_ms: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    failure_reason: str | None
    distribution: TaskDistribution | None


class TaskSummary(NamedTuple):
    """One stored task attempt (the slowest of the longest stages, and failed ones)."""

    stage_id: int
    stage_attempt_id: int
    task_id: int
    index: int  # type: ignore[assignment]  # Spark's task index; shadows tuple.index
    attempt: int
    executor_id: str | None
    status: str
    duration_ms: int | None
    executor_run_time_ms: int | None
    input_bytes: int
    shuffle_read_bytes: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    error_message: str | None


class TaskSelection(NamedTuple):
    """Which stored task attempts are heuristic inputs: those whose status (upper-cased) is one
    of ``statuses``, or whose value is above zero in one of ``positive_fields``."""

    statuses: frozenset[str]
    positive_fields: tuple[str, ...]

    def selects(self, row: Mapping[str, object]) -> bool:
        """Whether a task row (a stored or fetched row dict) is an input."""
        if str(row["status"]).upper() in self.statuses:
            return True
        for f in self.positive_fields:  # a loop, not any(): this runs for every task row
            if (row[f] or 0) > 0:  # type: ignore[operator]
                return True
        return False


#: The one rule for what ``AppData.tasks`` holds, out of the stored task attempts: the failed
#: ones (task failures reads their errors) and those that spilled (disk spill names the task that
#: spilled most). sparkscope.analysis.inputs applies it to every source; a heuristic that needs other
#: tasks widens it here.
INPUT_TASKS = TaskSelection(
    statuses=frozenset({"FAILED"}), positive_fields=("memory_bytes_spilled",)
)


class SqlMetric(NamedTuple):
    """One metric of a SQL plan node, parsed: ``unit`` is bytes, ms, count, average (``total``
    None, the median in ``med``) or unknown (the text in ``raw``); min/med/max are per task, and
    the stage, attempt and task named are those of the task with the maximum."""

    unit: str
    total: float | None
    min: float | None
    med: float | None
    max: float | None
    max_stage_id: int | None
    max_stage_attempt: int | None
    max_task_id: int | None
    raw: str | None


class SqlPlanNode(NamedTuple):
    """One node of a SQL execution's plan graph (the SHS ``nodes``), with the operator's
    plan-text fields (``detail``: Location, PartitionFilters, Join type, Condition, ...)."""

    node_id: int
    name: str
    codegen_id: int | None
    op_id: int | None
    metrics: Mapping[str, SqlMetric]
    detail: Mapping[str, str]
    children: tuple[int, ...]
    parents: tuple[int, ...]
    in_cached_plan: bool  # below an InMemoryTableScan: the cached plan, which did not run here
    stage_ids: tuple[int, ...]


class SqlExecutionSummary(NamedTuple):
    """One SQL execution (a query or DataFrame action) with its plan graph, nodes by id."""

    execution_id: int
    description: str
    status: str
    submission_time_ms: int | None
    duration_ms: int | None
    success_job_ids: tuple[int, ...]
    failed_job_ids: tuple[int, ...]
    running_job_ids: tuple[int, ...]
    stage_ids: tuple[int, ...]
    adaptive: bool
    nodes: tuple[SqlPlanNode, ...]


#: ``AppData.sql_status``: executions read (``ok``, or ``partial`` when some parts could not be
#: read); the application ran none; the server has no /sql; its answer failed; not fetched.
SQL_STATUSES = ("ok", "partial", "none", "unavailable", "failed", "unknown")


@dataclass(frozen=True)
class AppData:
    """Everything a heuristic may read about one application attempt."""

    app_id: str
    attempt_id: str | None
    name: str
    user: str | None
    start_time_ms: int | None
    end_time_ms: int | None
    duration_ms: int
    spark_properties: Mapping[str, str]
    executors: tuple[ExecutorSummary, ...]
    jobs: tuple[JobSummary, ...]
    stages: tuple[StageSummary, ...]
    tasks: tuple[TaskSummary, ...]  # the stored attempts INPUT_TASKS selects
    #: The Spark version the application ran on ("4.0.1"), None when the server did not say:
    #: Spark's defaults depend on it (see heuristics.sparkconf).
    spark_version: str | None = None
    sql_status: str = "unknown"  # one of SQL_STATUSES
    sql_executions: tuple[SqlExecutionSummary, ...] = ()

    @functools.cached_property
    def conf(self) -> SparkConf:
        """The configuration figures of ``spark_properties`` (memory, overhead, cores, local
        mode), parsed once for every reader."""
        return SparkConf.of(self.spark_properties)
