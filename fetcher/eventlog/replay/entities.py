"""The live entities of a replay (``LiveEntity`` in Spark): jobs, stages, executors, the
executor-stage summaries and cached RDDs, with the ``StageInfo`` fields the status store uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.metrics import Peaks

# ------------------------------------------------------------------------------------ entities


@dataclass
class StageInfo:
    """The parts of a ``StageInfo`` JSON the status store uses."""

    stage_id: int
    attempt: int
    name: str
    num_tasks: int
    rdd_ids: list[int]
    parent_ids: list[int]
    details: str
    submission_time: int | None
    completion_time: int | None
    failure_reason: str | None
    accumulables: list[dict[str, Any]]
    resource_profile_id: int
    push_enabled: bool
    push_mergers: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StageInfo:
        return cls(
            stage_id=d["Stage ID"],
            attempt=d.get("Stage Attempt ID", 0),
            name=d.get("Stage Name", ""),
            num_tasks=d.get("Number of Tasks", 0),
            rdd_ids=[r["RDD ID"] for r in d.get("RDD Info") or []],
            parent_ids=list(d.get("Parent IDs") or []),
            details=d.get("Details", ""),
            submission_time=d.get("Submission Time"),
            completion_time=d.get("Completion Time"),
            failure_reason=d.get("Failure Reason"),
            accumulables=d.get("Accumulables") or [],
            resource_profile_id=d.get("Resource Profile Id", 0),
            push_enabled=bool(d.get("Shuffle Push Enabled", False)),
            push_mergers=d.get("Shuffle Push Mergers Count", 0),
        )


class LiveJob:
    __slots__ = (
        "active_stages",
        "active_tasks",
        "completed_indices",
        "completed_stages",
        "completed_tasks",
        "completion_time",
        "description",
        "failed_stages",
        "failed_tasks",
        "job_group",
        "job_id",
        "job_tags",
        "killed_summary",
        "killed_tasks",
        "name",
        "num_tasks",
        "skipped_stages",
        "skipped_tasks",
        "sql_execution_id",
        "stage_ids",
        "status",
        "submission_time",
    )

    def __init__(
        self,
        job_id: int,
        name: str,
        description: str | None,
        submission_time: int | None,
        stage_ids: list[int],
        job_group: str | None,
        job_tags: list[str],
        num_tasks: int,
        sql_execution_id: int | None,
    ) -> None:
        self.job_id = job_id
        self.name = name
        self.description = description
        self.submission_time = submission_time
        self.stage_ids = stage_ids
        self.job_group = job_group
        self.job_tags = job_tags
        self.num_tasks = num_tasks
        self.sql_execution_id = sql_execution_id
        self.active_tasks = 0
        self.completed_tasks = 0
        self.failed_tasks = 0
        self.completed_indices: set[int] = set()
        self.killed_tasks = 0
        self.killed_summary: dict[str, int] = {}
        self.skipped_tasks = 0
        self.skipped_stages: set[int] = set()
        self.status = "RUNNING"
        self.completion_time: int | None = None
        self.completed_stages: set[int] = set()
        self.active_stages = 0
        self.failed_stages = 0

    def snapshot(self) -> dict[str, Any]:
        """The JobData JSON as ``doUpdate`` would store it now."""
        d: dict[str, Any] = {"jobId": self.job_id, "name": self.name}
        if self.description is not None:
            d["description"] = self.description
        if self.submission_time is not None:
            d["submissionTime"] = self.submission_time
        if self.completion_time is not None:
            d["completionTime"] = self.completion_time
        d["stageIds"] = list(self.stage_ids)
        if self.job_group is not None:
            d["jobGroup"] = self.job_group
        d["jobTags"] = list(self.job_tags)
        d["status"] = self.status
        d["numTasks"] = self.num_tasks
        d["numActiveTasks"] = self.active_tasks
        d["numCompletedTasks"] = self.completed_tasks
        d["numSkippedTasks"] = self.skipped_tasks
        d["numFailedTasks"] = self.failed_tasks
        d["numKilledTasks"] = self.killed_tasks
        d["numCompletedIndices"] = len(self.completed_indices)
        d["numActiveStages"] = self.active_stages
        d["numCompletedStages"] = len(self.completed_stages)
        d["numSkippedStages"] = len(self.skipped_stages)
        d["numFailedStages"] = self.failed_stages
        d["killedTasksSummary"] = dict(self.killed_summary)
        return d


class ExecStageSummary:
    __slots__ = (
        "executor_id",
        "failed",
        "is_excluded",
        "killed",
        "metrics",
        "peaks",
        "succeeded",
        "task_time",
    )

    def __init__(self, executor_id: str) -> None:
        self.executor_id = executor_id
        self.task_time = 0
        self.succeeded = 0
        self.failed = 0
        self.killed = 0
        self.is_excluded = False
        self.metrics = [0] * mx.N_METRICS
        self.peaks = Peaks()


class LiveStage:
    __slots__ = (
        "__weakref__",
        "active_per_executor",
        "active_tasks",
        "completed_indices",
        "completed_tasks",
        "description",
        "excluded_executors",
        "executor_summaries",
        "failed_tasks",
        "first_launch_time",
        "info",
        "job_ids",
        "jobs",
        "killed_summary",
        "killed_tasks",
        "locality",
        "metrics",
        "peaks",
        "scheduling_pool",
        "spec",
        "status",
    )

    def __init__(self, info: StageInfo) -> None:
        self.info = info
        self.jobs: list[LiveJob] = []
        self.job_ids: set[int] = set()
        self.status = "PENDING"
        self.description: str | None = None
        self.scheduling_pool = "default"
        self.active_tasks = 0
        self.completed_tasks = 0
        self.failed_tasks = 0
        self.completed_indices: set[int] = set()
        self.killed_tasks = 0
        self.killed_summary: dict[str, int] = {}
        self.first_launch_time: int | None = None
        self.locality: dict[str, int] = {}
        self.metrics = [0] * mx.N_METRICS
        self.executor_summaries: dict[str, ExecStageSummary] = {}
        self.active_per_executor: dict[str, int] = {}
        self.excluded_executors: set[str] = set()
        self.peaks = Peaks()
        self.spec: list[int] | None = (
            None  # speculation summary counters, once a task is speculative
        )

    def executor_summary(self, executor_id: str) -> ExecStageSummary:
        es = self.executor_summaries.get(executor_id)
        if es is None:
            es = self.executor_summaries[executor_id] = ExecStageSummary(executor_id)
        return es

    @property
    def key(self) -> tuple[int, int]:
        return (self.info.stage_id, self.info.attempt)


class LiveExecutor:
    __slots__ = (
        "active_tasks",
        "add_time",
        "attributes",
        "completed_tasks",
        "disk_used",
        "excluded_in_stages",
        "executor_id",
        "executor_logs",
        "failed_tasks",
        "host",
        "host_port",
        "is_active",
        "is_excluded",
        "max_memory",
        "max_tasks",
        "memory_used",
        "peaks",
        "rdd_blocks",
        "remove_reason",
        "remove_time",
        "resource_profile_id",
        "resources",
        "total_cores",
        "total_duration",
        "total_gc_time",
        "total_input_bytes",
        "total_off_heap",
        "total_on_heap",
        "total_shuffle_read",
        "total_shuffle_write",
        "total_tasks",
        "used_off_heap",
        "used_on_heap",
    )

    def __init__(self, executor_id: str, add_time: int) -> None:
        self.executor_id = executor_id
        self.host_port: str | None = None
        self.host: str | None = None
        self.is_active = True
        self.total_cores = 0
        self.add_time = add_time
        self.remove_time: int | None = None
        self.remove_reason: str | None = None
        self.rdd_blocks = 0
        self.memory_used = 0
        self.disk_used = 0
        self.max_tasks = 0
        self.max_memory = 0
        self.total_tasks = 0
        self.active_tasks = 0
        self.completed_tasks = 0
        self.failed_tasks = 0
        self.total_duration = 0
        self.total_gc_time = 0
        self.total_input_bytes = 0
        self.total_shuffle_read = 0
        self.total_shuffle_write = 0
        self.is_excluded = False
        self.excluded_in_stages: set[int] = set()
        self.executor_logs: dict[str, str] = {}
        self.attributes: dict[str, str] = {}
        self.resources: dict[str, Any] = {}
        self.total_on_heap = -1
        self.total_off_heap = 0
        self.used_on_heap = 0
        self.used_off_heap = 0
        self.resource_profile_id = 0
        self.peaks = Peaks()

    @property
    def hostname(self) -> str | None:
        if self.host is not None:
            return self.host
        return self.host_port.rsplit(":", 1)[0] if self.host_port else None


class LiveRDD:
    """A cached RDD: which executors hold each block, and memory/disk per executor."""

    __slots__ = ("dists", "off_heap", "partitions")

    def __init__(self, off_heap: bool) -> None:
        self.off_heap = off_heap
        self.partitions: dict[str, list[str]] = {}
        self.dists: dict[str, list[int]] = {}
