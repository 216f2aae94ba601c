"""The replay's state: the live entities, the "store" they are written to, and the plumbing
the event handlers share (see :mod:`fetcher.eventlog.replay.status`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fetcher.eventlog.replay.entities import (
    ExecStageSummary,
    LiveExecutor,
    LiveJob,
    LiveRDD,
    LiveStage,
    StageInfo,
)
from fetcher.eventlog.replay.tasks_table import LiveTask, TaskTable

DRIVER = "driver"


@dataclass
class AppInfo:
    """The application's identity and times, from its start and end events."""

    app_id: str | None = None
    name: str | None = None
    attempt_id: str | None = None
    start_time: int | None = None
    end_time: int = -1
    spark_user: str | None = None
    completed: bool = False
    spark_version: str | None = None
    driver_logs: dict[str, str] = field(default_factory=dict)


class ReplayState:
    """What the handlers of :class:`~fetcher.eventlog.replay.status.StatusReplay` share."""

    def __init__(self, last_update_time: int | None = None) -> None:
        self.last_update_time = last_update_time
        self.app = AppInfo()
        self.environment: dict[str, Any] | None = None
        self.resource_profiles: dict[int, dict[str, Any]] = {}
        self._rp_cpus: dict[int, int] = {}
        self.default_cpus_per_task = 1

        self.live_stages: dict[tuple[int, int], LiveStage] = {}
        self.live_jobs: dict[int, LiveJob] = {}
        self.live_executors: dict[str, LiveExecutor] = {}
        self.dead_executors: dict[str, LiveExecutor] = {}
        self.live_tasks: dict[int, LiveTask] = {}
        self.live_rdds: dict[int, LiveRDD] = {}

        # the "store"
        self.jobs: dict[int, dict[str, Any]] = {}
        self.stages: dict[tuple[int, int], LiveStage] = {}
        self.executors: dict[str, LiveExecutor] = {}
        self.exec_stage: dict[tuple[int, int, str], ExecStageSummary] = {}
        self.tasks: dict[tuple[int, int], TaskTable] = {}
        self.speculation: dict[tuple[int, int], list[int]] = {}

        # strings interned for task rows
        self.strings: list[str] = []
        self._string_ids: dict[str, int] = {}

        # event-log-only extras
        self.stage_parents: dict[int, list[int]] = {}
        self.executor_events: list[dict[str, Any]] = []
        self.unknown_events: dict[str, int] = {}

        self._handlers: dict[str, Any] = {}  # filled by StatusReplay

    # -- plumbing ------------------------------------------------------------------------------

    def handle(self, event: dict[str, Any]) -> None:
        h = self._handlers.get(event["Event"])
        if h is not None:
            h(event)

    def _noop(self, event: dict[str, Any]) -> None:
        pass

    def intern(self, s: str | None) -> int:
        s = "" if s is None else s
        i = self._string_ids.get(s)
        if i is None:
            i = self._string_ids[s] = len(self.strings)
            self.strings.append(s)
        return i

    def _write_job(self, job: LiveJob) -> None:
        self.jobs[job.job_id] = job.snapshot()

    def _write_stage(self, stage: LiveStage) -> None:
        self.stages[stage.key] = stage

    def _write_esummary(self, stage: LiveStage, es: ExecStageSummary) -> None:
        self.exec_stage[(stage.info.stage_id, stage.info.attempt, es.executor_id)] = es

    def _write_executor(self, ex: LiveExecutor) -> None:
        self.executors[ex.executor_id] = ex

    def _get_or_create_executor(self, executor_id: str, add_time: int) -> LiveExecutor:
        ex = self.live_executors.get(executor_id)
        if ex is None:
            ex = self.live_executors[executor_id] = LiveExecutor(executor_id, add_time)
        return ex

    def _get_or_create_stage(self, info: StageInfo) -> LiveStage:
        key = (info.stage_id, info.attempt)
        st = self.live_stages.get(key)
        if st is None:
            st = self.live_stages[key] = LiveStage(info)
        st.info = info
        return st
