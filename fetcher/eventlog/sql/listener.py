"""Replay of the SQL events into what ``SQLAppStatusListener`` stores, and the ``/sql`` answer.

The rules followed (Spark 4.0's SQL listener when replaying, asynchronous tracking off as in the
SHS): an execution is written when it has seen its end event and one end event per job (or when a
job of an already-written execution starts, which revives it); metric values are aggregated once,
at the execution's end, over the task-level accumulator updates of its stages (one slot per task
index, the last attempt's value unless an attempt of that index already succeeded) plus the
driver-side updates, and formatted by ``SQLMetrics.stringValue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fetcher.eventlog.scalaorder import int_map_order
from fetcher.eventlog.sql.graph import SUM, PlanGraph, build_graph, string_value

EXEC_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
EXEC_END = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
AQE_UPDATE = "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate"
AQE_METRICS = "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveSQLMetricUpdates"
DRIVER_ACCUMS = "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates"


class StageMetrics:
    """``LiveStageMetrics``: per accumulator, one value slot per task index."""

    __slots__ = (
        "attempt",
        "completed",
        "maxes",
        "num_tasks",
        "stage_id",
        "task_indices",
        "types",
        "values",
    )

    def __init__(self, stage_id: int, attempt: int, num_tasks: int, types: dict[int, str]) -> None:
        self.stage_id = stage_id
        self.attempt = attempt
        self.num_tasks = num_tasks
        self.types = types
        self.task_indices: dict[int, int] = {}
        self.completed: set[int] = set()
        self.values: dict[int, list[int]] = {}
        self.maxes: dict[int, list[int]] = {}  # id -> [value, taskId]

    def update(self, task_id: int, idx: int, finished: bool, accums: list[dict[str, Any]]) -> None:
        if idx == -1:
            if task_id not in self.task_indices:
                return
            idx = self.task_indices[task_id]
        else:
            self.task_indices[task_id] = idx
        if idx in self.completed:
            return
        for acc in accums:
            upd = acc.get("Update")
            aid = acc.get("ID")
            if upd is None or aid not in self.types:
                continue
            value = int(upd)
            slots = self.values.get(aid)
            if slots is None:
                slots = self.values[aid] = [0] * self.num_tasks
            if idx >= len(slots):
                slots.extend([0] * (idx + 1 - len(slots)))
            slots[idx] = value
            if self.types[aid] != SUM:
                mx = self.maxes.get(aid)
                if mx is None:
                    self.maxes[aid] = [value, task_id]
                elif value > mx[0]:
                    mx[0], mx[1] = value, task_id
        if finished:
            self.completed.add(idx)


@dataclass
class LiveExecution:
    execution_id: int
    description: str | None = None
    details: str | None = None
    plan_description: str | None = None
    metrics: list[tuple[str, int, str]] = field(default_factory=list)
    submission_time: int = -1
    completion_time: int | None = None
    jobs: dict[int, str] = field(default_factory=dict)
    job_order: list[int] = field(default_factory=list)
    stages: list[int] = field(default_factory=list)  # insertion order, unique
    driver_accums: list[tuple[int, int]] = field(default_factory=list)
    metric_values: dict[int, str] | None = None
    end_events: int = 0
    error_message: str | None = None

    def snapshot(self) -> dict[str, Any]:
        return {
            "id": self.execution_id,
            "description": self.description,
            "details": self.details,
            "plan": self.plan_description,
            "metrics": list(self.metrics),
            "submission": self.submission_time,
            "completion": self.completion_time,
            "jobs": dict(self.jobs),
            "job_order": list(self.job_order),
            "stages": list(self.stages),
            "metric_values": self.metric_values,
            "error": self.error_message,
        }


class SQLReplay:
    interesting = frozenset(
        {
            "SparkListenerJobStart",
            "SparkListenerJobEnd",
            "SparkListenerStageSubmitted",
            "SparkListenerTaskStart",
            "SparkListenerTaskEnd",
            "SparkListenerExecutorMetricsUpdate",
            EXEC_START,
            EXEC_END,
            AQE_UPDATE,
            AQE_METRICS,
            DRIVER_ACCUMS,
        }
    )

    def __init__(self) -> None:
        self.live: dict[int, LiveExecution] = {}
        self.stage_metrics: dict[int, StageMetrics] = {}
        self.store: dict[int, dict[str, Any]] = {}
        self.graphs: dict[int, PlanGraph] = {}
        self._handlers = {
            "SparkListenerJobStart": self._job_start,
            "SparkListenerJobEnd": self._job_end,
            "SparkListenerStageSubmitted": self._stage_submitted,
            "SparkListenerTaskStart": self._task_start,
            "SparkListenerTaskEnd": self._task_end,
            "SparkListenerExecutorMetricsUpdate": self._metrics_update,
            EXEC_START: self._exec_start,
            EXEC_END: self._exec_end,
            AQE_UPDATE: self._aqe_update,
            AQE_METRICS: self._aqe_metrics,
            DRIVER_ACCUMS: self._driver_accums,
        }

    def handle(self, event: dict[str, Any]) -> None:
        self._handlers[event["Event"]](event)

    # -- bookkeeping ---------------------------------------------------------------------------

    def _get_or_create(self, execution_id: int) -> LiveExecution:
        ex = self.live.get(execution_id)
        if ex is None:
            ex = self.live[execution_id] = LiveExecution(execution_id)
        return ex

    def _write(self, ex: LiveExecution) -> None:
        self.store[ex.execution_id] = ex.snapshot()

    def _update(self, ex: LiveExecution, force: bool = False) -> None:
        if ex.end_events >= len(ex.jobs) + 1:
            self._write(ex)
            self._remove_stale(ex)
            self.live.pop(ex.execution_id, None)
        elif force:
            self._write(ex)

    def _remove_stale(self, ex: LiveExecution) -> None:
        active: set[int] = set()
        for other in self.live.values():
            if other is not ex:
                active.update(other.stages)
        for sid in [s for s in self.stage_metrics if s not in active]:
            del self.stage_metrics[sid]

    def _is_sql_stage(self, stage_id: int) -> bool:
        return any(stage_id in ex.stages for ex in self.live.values())

    # -- events --------------------------------------------------------------------------------

    def _job_start(self, e: dict[str, Any]) -> None:
        props = e.get("Properties") or {}
        eid_s = props.get("spark.sql.execution.id")
        if eid_s is None:
            return
        eid = int(eid_s)
        ex = self.live.get(eid)
        if ex is None:
            stored = self.store.get(eid)
            if stored is not None:
                ex = LiveExecution(
                    eid,
                    stored["description"],
                    stored["details"],
                    stored["plan"],
                    list(stored["metrics"]),
                    stored["submission"],
                    stored["completion"],
                    dict(stored["jobs"]),
                    list(stored["job_order"]),
                    list(stored["stages"]),
                    [],
                    stored["metric_values"],
                    len(stored["jobs"]) + 1,
                    stored["error"],
                )
                self.live[eid] = ex
            else:
                ex = self._get_or_create(eid)
        types = {m[1]: m[2] for m in ex.metrics}
        if types:
            for s in e.get("Stage Infos") or []:
                self.stage_metrics[s["Stage ID"]] = StageMetrics(
                    s["Stage ID"], 0, s.get("Number of Tasks", 0), types
                )
        job_id = e["Job ID"]
        if job_id not in ex.jobs:
            ex.job_order.append(job_id)
        ex.jobs[job_id] = "RUNNING"
        for sid in int_map_order(e.get("Stage IDs") or []):
            if sid not in ex.stages:
                ex.stages.append(sid)
        self._update(ex, force=True)

    def _stage_submitted(self, e: dict[str, Any]) -> None:
        info = e["Stage Info"]
        sid = info["Stage ID"]
        if not self._is_sql_stage(sid):
            return
        sm = self.stage_metrics.get(sid)
        attempt_id = info.get("Stage Attempt ID", 0)
        if sm is not None and sm.attempt != attempt_id:
            self.stage_metrics[sid] = StageMetrics(sid, attempt_id, sm.num_tasks, sm.types)

    def _job_end(self, e: dict[str, Any]) -> None:
        job_id = e["Job ID"]
        result = (e.get("Job Result") or {}).get("Result")
        status = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"
        for ex in list(self.live.values()):
            if job_id in ex.jobs:
                ex.jobs[job_id] = status
                ex.end_events += 1
                self._update(ex)

    def _task_start(self, e: dict[str, Any]) -> None:
        sm = self.stage_metrics.get(e["Stage ID"])
        if sm is not None and sm.attempt == e.get("Stage Attempt ID", 0):
            info = e["Task Info"]
            sm.task_indices[info["Task ID"]] = info["Index"]

    def _task_end(self, e: dict[str, Any]) -> None:
        sid = e["Stage ID"]
        if not self._is_sql_stage(sid):
            return
        info = e.get("Task Info") or {}
        sm = self.stage_metrics.get(sid)
        if sm is None or sm.attempt != e.get("Stage Attempt ID", 0):
            return
        successful = (
            bool(info.get("Finish Time")) and not info.get("Failed") and not info.get("Killed")
        )
        sm.update(info["Task ID"], info["Index"], successful, info.get("Accumulables") or [])

    def _metrics_update(self, e: dict[str, Any]) -> None:
        for upd in e.get("Metrics Updated") or []:
            sm = self.stage_metrics.get(upd.get("Stage ID"))
            if sm is not None and sm.attempt == upd.get("Stage Attempt ID"):
                sm.update(upd.get("Task ID"), -1, False, upd.get("Accumulator Updates") or [])

    def _plan_metrics(self, graph: PlanGraph) -> list[tuple[str, int, str]]:
        seen: dict[int, tuple[str, int, str]] = {}
        for node in graph.all_nodes:
            for m in node.metrics:
                seen[m[1]] = m
        return list(seen.values())

    def _exec_start(self, e: dict[str, Any]) -> None:
        eid = e["executionId"]
        graph = build_graph(e.get("sparkPlanInfo") or {})
        self.graphs[eid] = graph
        ex = self._get_or_create(eid)
        ex.description = e.get("description")
        ex.details = e.get("details")
        ex.plan_description = e.get("physicalPlanDescription")
        ex.metrics = self._plan_metrics(graph)
        ex.submission_time = e.get("time", -1)
        self._update(ex)

    def _aqe_update(self, e: dict[str, Any]) -> None:
        eid = e["executionId"]
        graph = build_graph(e.get("sparkPlanInfo") or {})
        self.graphs[eid] = graph
        ex = self._get_or_create(eid)
        ex.plan_description = e.get("physicalPlanDescription")
        ex.metrics = ex.metrics + self._plan_metrics(graph)
        self._update(ex)

    def _aqe_metrics(self, e: dict[str, Any]) -> None:
        ex = self._get_or_create(e["executionId"])
        ex.metrics = ex.metrics + [
            (m.get("name"), m.get("accumulatorId"), m.get("metricType"))
            for m in e.get("sqlPlanMetrics") or []
        ]
        self._update(ex)

    def _exec_end(self, e: dict[str, Any]) -> None:
        ex = self.live.get(e["executionId"])
        if ex is None:
            return
        ex.completion_time = e.get("time")
        ex.error_message = e.get("errorMessage")
        self._update(ex)
        ex.metric_values = self._aggregate(ex)
        self._remove_stale(ex)
        ex.end_events += 1
        self._update(ex, force=True)

    def _driver_accums(self, e: dict[str, Any]) -> None:
        ex = self.live.get(e["executionId"])
        if ex is None:
            return
        ex.driver_accums.extend((int(a), int(b)) for a, b in e.get("accumUpdates") or [])
        self._update(ex)

    def _aggregate(self, ex: LiveExecution) -> dict[int, str]:
        types = {m[1]: m[2] for m in ex.metrics}
        stages = [
            self.stage_metrics[s] for s in int_map_order(ex.stages) if s in self.stage_metrics
        ]
        all_values: dict[int, list[int]] = {}
        maxes: dict[int, list[int]] = {}
        for sm in stages:
            for aid, vals in sm.values.items():
                if aid in types:
                    all_values.setdefault(aid, []).extend(vals)
        for sm in stages:
            for aid, (value, task_id) in sm.maxes.items():
                if aid not in types:
                    continue
                cur = maxes.get(aid)
                if cur is None or value > cur[0]:
                    maxes[aid] = [value, sm.stage_id, sm.attempt, task_id]
        for aid, value in ex.driver_accums:
            if aid in types:
                if aid in all_values and aid in maxes and value > maxes[aid][0]:
                    del maxes[aid]
                all_values.setdefault(aid, []).append(value)
        return {
            aid: string_value(types[aid], vals, maxes.get(aid, []))
            for aid, vals in all_values.items()
        }

    def finish(self, now: int | None = None) -> None:
        for ex in self.live.values():
            ex.metric_values = self._aggregate(ex)
            self._write(ex)

    # -- REST ----------------------------------------------------------------------------------
