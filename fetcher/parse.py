"""History Server JSON -> plain row dicts, one per table (pure: no I/O, no database).

Parsing is tolerant the way an SHS client must be: unknown fields are ignored, fields that older
Spark versions lack get defaults, and only a body of the wrong shape (say, an object where a list
belongs) is an error. Secrets in properties are redacted here, before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sparkscope.redaction import redact

# SHS task-summary names -> our flattened, unit-suffixed names.
_TASK_METRICS: dict[str, str] = {
    "duration": "duration_ms",
    "executorDeserializeTime": "executor_deserialize_time_ms",
    "executorDeserializeCpuTime": "executor_deserialize_cpu_time_ns",
    "executorRunTime": "executor_run_time_ms",
    "executorCpuTime": "executor_cpu_time_ns",
    "resultSize": "result_size_bytes",
    "jvmGcTime": "jvm_gc_time_ms",
    "resultSerializationTime": "result_serialization_time_ms",
    "gettingResultTime": "getting_result_time_ms",
    "schedulerDelay": "scheduler_delay_ms",
    "peakExecutionMemory": "peak_execution_memory_bytes",
    "memoryBytesSpilled": "memory_bytes_spilled",
    "diskBytesSpilled": "disk_bytes_spilled",
    "inputMetrics.bytesRead": "input_bytes",
    "inputMetrics.recordsRead": "input_records",
    "outputMetrics.bytesWritten": "output_bytes",
    "outputMetrics.recordsWritten": "output_records",
    "shuffleReadMetrics.readBytes": "shuffle_read_bytes",
    "shuffleReadMetrics.readRecords": "shuffle_read_records",
    "shuffleReadMetrics.fetchWaitTime": "shuffle_fetch_wait_ms",
    "shuffleReadMetrics.remoteBytesRead": "shuffle_remote_bytes_read",
    "shuffleReadMetrics.remoteReqsDuration": "shuffle_remote_reqs_duration_ms",
    "shuffleWriteMetrics.writeBytes": "shuffle_write_bytes",
    "shuffleWriteMetrics.writeRecords": "shuffle_write_records",
    "shuffleWriteMetrics.writeTime": "shuffle_write_time_ns",
}
_EXECUTOR_METRICS: dict[str, str] = {
    "taskTime": "task_time_ms",
    "failedTasks": "failed_tasks",
    "succeededTasks": "succeeded_tasks",
    "killedTasks": "killed_tasks",
    "inputBytes": "input_bytes",
    "outputBytes": "output_bytes",
    "shuffleRead": "shuffle_read_bytes",
    "shuffleWrite": "shuffle_write_bytes",
    "memoryBytesSpilled": "memory_bytes_spilled",
    "diskBytesSpilled": "disk_bytes_spilled",
}
_ENV_SECTIONS = {
    "sparkProperties": "spark",
    "hadoopProperties": "hadoop",
    "systemProperties": "system",
    "metricsProperties": "metrics",
}


class ParseError(ValueError):
    """A response body does not have the shape the SHS API documents."""


# ------------------------------------------------------------------------------------- helpers


def parse_time_ms(value: Any) -> int | None:
    """An SHS timestamp (``2026-11-29T17:07:08.478GMT``) or epoch number -> epoch ms."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _int(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip().replace("GMT", "+0000").replace("Z", "+0000")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return int(datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    return None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int(value: Any) -> int:
    """A number for a 64-bit column; ParseError for one the database cannot hold."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        raise ParseError(f"number out of range: {str(value)[:40]}")
    if isinstance(value, float):
        if -9.2e18 < value < 9.2e18:  # NaN fails both
            return int(value)
        raise ParseError(f"number out of range: {value!r}")
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return 0
        return _int(number)
    return 0


def _opt_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _str(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:limit]


def _need_list(data: Any, what: str) -> list[Any]:
    if not isinstance(data, list):
        raise ParseError(f"{what}: expected a JSON list, got {type(data).__name__}")
    return data


def _need_dict(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _sub(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _dig(data: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = data
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


# ------------------------------------------------------------------------------------- listing


@dataclass(frozen=True)
class AppEntry:
    """One application as listed, reduced to its latest attempt."""

    app_id: str
    attempt_id: str | None
    name: str
    user: str | None
    start_time_ms: int | None
    end_time_ms: int | None
    duration_ms: int | None
    last_updated_ms: int | None
    completed: bool
    spark_version: str | None
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        """Natural key within one server: (app id, attempt id or '')."""
        return (self.app_id, self.attempt_id or "")


def _attempt_start(attempt: Mapping[str, Any]) -> int:
    return _int(attempt.get("startTimeEpoch")) or (parse_time_ms(attempt.get("startTime")) or 0)


def parse_app_entry(item: Any) -> AppEntry:
    """One listing entry (or ``/applications/{id}``) -> its latest attempt."""
    item = _need_dict(item, "application")
    app_id = item.get("id")
    if not isinstance(app_id, str) or not app_id:
        raise ParseError("application: missing id")
    attempts = [a for a in item.get("attempts") or [] if isinstance(a, dict)]
    latest = max(attempts, key=_attempt_start) if attempts else {}
    start = _int(latest.get("startTimeEpoch")) or parse_time_ms(latest.get("startTime"))
    end = _int(latest.get("endTimeEpoch")) or parse_time_ms(latest.get("endTime"))
    updated = _int(latest.get("lastUpdatedEpoch")) or parse_time_ms(latest.get("lastUpdated"))
    duration = _opt_int(latest.get("duration"))
    if duration is None and start and end:
        duration = end - start
    attempt_id = latest.get("attemptId")
    return AppEntry(
        app_id=app_id[:255],
        attempt_id=str(attempt_id)[:64] if attempt_id not in (None, "") else None,
        name=_str(item.get("name"), 1000) or "",
        user=_str(latest.get("sparkUser"), 255),
        start_time_ms=start or None,
        end_time_ms=end or None,
        duration_ms=duration,
        last_updated_ms=updated or None,
        completed=bool(latest.get("completed", False)),
        spark_version=_str(latest.get("appSparkVersion"), 64),
        raw={"id": app_id, "name": item.get("name"), "attempt": latest},
    )


def parse_listing(data: Any) -> list[AppEntry]:
    """The ``/applications`` listing -> entries (bad entries are skipped, not fatal)."""
    entries = []
    for item in _need_list(data, "applications"):
        try:
            entries.append(parse_app_entry(item))
        except ParseError:
            continue
    return entries


# ---------------------------------------------------------------------------------- environment


def redact_properties(rows: list[dict[str, Any]], pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    """Replace values whose key or value matches the redaction pattern."""
    return [{**row, "value": redact(row["name"], row["value"], pattern)} for row in rows]


def parse_environment(
    data: Any, redaction: re.Pattern[str], hadoop: bool = False
) -> list[dict[str, Any]]:
    """``/environment`` -> property rows (section, name, value), secrets redacted."""
    data = _need_dict(data, "environment")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, section in _ENV_SECTIONS.items():
        if section == "hadoop" and not hadoop:
            continue
        for pair in data.get(key) or []:
            if not isinstance(pair, list | tuple) or len(pair) < 2 or not isinstance(pair[0], str):
                continue
            name = pair[0][:500]
            value = None if pair[1] is None else str(pair[1])
            rows[(section, name)] = {"section": section, "name": name, "value": value}
    runtime = data.get("runtime")
    if isinstance(runtime, dict):
        for name, value in runtime.items():
            rows[("runtime", name[:500])] = {
                "section": "runtime",
                "name": name[:500],
                "value": None if value is None else str(value),
            }
    return redact_properties(list(rows.values()), redaction)


# ------------------------------------------------------------------------------------ executors


def parse_executors(data: Any) -> list[dict[str, Any]]:
    """``/allexecutors`` -> executor rows."""
    rows: dict[str, dict[str, Any]] = {}
    for e in _need_list(data, "allexecutors"):
        if not isinstance(e, dict) or e.get("id") is None:
            continue
        exec_id = str(e["id"])[:64]
        peak = _sub(e, "peakMemoryMetrics")
        rows[exec_id] = {
            "executor_id": exec_id,
            "is_driver": exec_id == "driver",
            "host_port": _str(e.get("hostPort"), 500),
            "total_cores": _int(e.get("totalCores")),
            "max_memory_bytes": _int(e.get("maxMemory")),
            "add_time_ms": parse_time_ms(e.get("addTime")),
            "remove_time_ms": parse_time_ms(e.get("removeTime")),
            "remove_reason": _str(e.get("removeReason"), 10000),
            "total_duration_ms": _int(e.get("totalDuration")),
            "total_gc_time_ms": _int(e.get("totalGCTime")),
            "total_tasks": _int(e.get("totalTasks")),
            "failed_tasks": _int(e.get("failedTasks")),
            "completed_tasks": _int(e.get("completedTasks")),
            "total_input_bytes": _int(e.get("totalInputBytes")),
            "total_shuffle_read_bytes": _int(e.get("totalShuffleRead")),
            "total_shuffle_write_bytes": _int(e.get("totalShuffleWrite")),
            "peak_jvm_heap_bytes": _opt_int(peak.get("JVMHeapMemory")),
            "peak_jvm_offheap_bytes": _opt_int(peak.get("JVMOffHeapMemory")),
            "raw": e,
        }
    return list(rows.values())


# ----------------------------------------------------------------------------------------- jobs


def parse_jobs(data: Any) -> list[dict[str, Any]]:
    """``/jobs`` -> job rows."""
    rows: dict[int, dict[str, Any]] = {}
    for j in _need_list(data, "jobs"):
        if not isinstance(j, dict) or j.get("jobId") is None:
            continue
        job_id = _int(j["jobId"])
        rows[job_id] = {
            "job_id": job_id,
            "name": _str(j.get("name"), 100000),
            "description": _str(j.get("description"), 100000),
            "status": _str(j.get("status"), 32) or "UNKNOWN",
            "submission_time_ms": parse_time_ms(j.get("submissionTime")),
            "completion_time_ms": parse_time_ms(j.get("completionTime")),
            "num_tasks": _int(j.get("numTasks")),
            "num_failed_tasks": _int(j.get("numFailedTasks")),
            "num_failed_stages": _int(j.get("numFailedStages")),
            "stage_ids": [_int(s) for s in j.get("stageIds") or []],
            "raw": j,
        }
    return list(rows.values())


# --------------------------------------------------------------------------------------- stages


def flatten_distribution(
    data: Mapping[str, Any], names: Mapping[str, str]
) -> dict[str, list[float]]:
    """A quantile summary (nested SHS names) -> {our name: values}."""
    out: dict[str, list[float]] = {}
    for shs_name, ours in names.items():
        values = _dig(data, shs_name)
        if isinstance(values, list):
            try:
                out[ours] = [float(v) for v in values]
            except (TypeError, ValueError):
                continue  # not a numeric series: a field we do not know
    return out


def parse_task_summary(data: Any) -> dict[str, Any] | None:
    """A ``taskSummary`` body (or a stage's ``taskMetricsDistributions``) -> distribution row parts."""
    if not isinstance(data, dict):
        return None
    quantiles = data.get("quantiles")
    if not isinstance(quantiles, list) or not quantiles:
        return None
    return {
        "quantiles": [float(q) for q in quantiles],
        "metrics": flatten_distribution(data, _TASK_METRICS),
    }


def parse_stages(data: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``/stages`` (optionally withSummaries) -> (stage rows, distribution rows)."""
    stages: dict[tuple[int, int], dict[str, Any]] = {}
    dists: dict[tuple[int, int], dict[str, Any]] = {}
    for s in _need_list(data, "stages"):
        if not isinstance(s, dict) or s.get("stageId") is None:
            continue
        key = (_int(s["stageId"]), _int(s.get("attemptId")))
        raw = {
            k: v
            for k, v in s.items()
            if k not in ("taskMetricsDistributions", "executorMetricsDistributions", "tasks")
        }
        stages[key] = {
            "stage_id": key[0],
            "attempt_id": key[1],
            "name": _str(s.get("name"), 100000),
            "status": _str(s.get("status"), 32) or "UNKNOWN",
            "num_tasks": _int(s.get("numTasks")),
            "num_complete_tasks": _int(s.get("numCompleteTasks")),
            "num_failed_tasks": _int(s.get("numFailedTasks")),
            "num_killed_tasks": _int(s.get("numKilledTasks")),
            "submission_time_ms": parse_time_ms(s.get("submissionTime")),
            "first_task_launched_time_ms": parse_time_ms(s.get("firstTaskLaunchedTime")),
            "completion_time_ms": parse_time_ms(s.get("completionTime")),
            "failure_reason": _str(s.get("failureReason"), 100000),
            "executor_run_time_ms": _int(s.get("executorRunTime")),
            "executor_cpu_time_ns": _int(s.get("executorCpuTime")),
            "jvm_gc_time_ms": _int(s.get("jvmGcTime")),
            "input_bytes": _int(s.get("inputBytes")),
            "input_records": _int(s.get("inputRecords")),
            "output_bytes": _int(s.get("outputBytes")),
            "output_records": _int(s.get("outputRecords")),
            "shuffle_read_bytes": _int(s.get("shuffleReadBytes")),
            "shuffle_read_records": _int(s.get("shuffleReadRecords")),
            "shuffle_write_bytes": _int(s.get("shuffleWriteBytes")),
            "shuffle_write_records": _int(s.get("shuffleWriteRecords")),
            "shuffle_fetch_wait_ms": _int(s.get("shuffleFetchWaitTime")),
            "memory_bytes_spilled": _int(s.get("memoryBytesSpilled")),
            "disk_bytes_spilled": _int(s.get("diskBytesSpilled")),
            "peak_execution_memory_bytes": _int(s.get("peakExecutionMemory")),
            "raw": raw,
        }
        task_dist = parse_task_summary(s.get("taskMetricsDistributions"))
        if task_dist is not None:
            exec_raw = s.get("executorMetricsDistributions")
            task_dist["executor_metrics"] = (
                flatten_distribution(exec_raw, _EXECUTOR_METRICS)
                if isinstance(exec_raw, dict)
                else None
            )
            dists[key] = {"stage_id": key[0], "attempt_id": key[1], **task_dist}
    return list(stages.values()), list(dists.values())


def parse_stage_executors(stage_id: int, attempt_id: int, data: Any) -> list[dict[str, Any]]:
    """A stage attempt's ``executorSummary`` -> per-executor rows."""
    summary = _need_dict(data, "stage").get("executorSummary")
    if not isinstance(summary, dict):
        return []
    rows = []
    for exec_id, e in summary.items():
        if not isinstance(e, dict):
            continue
        rows.append(
            {
                "stage_id": stage_id,
                "attempt_id": attempt_id,
                "executor_id": str(exec_id)[:64],
                "task_time_ms": _int(e.get("taskTime")),
                "failed_tasks": _int(e.get("failedTasks")),
                "succeeded_tasks": _int(e.get("succeededTasks")),
                "killed_tasks": _int(e.get("killedTasks")),
                "input_bytes": _int(e.get("inputBytes")),
                "output_bytes": _int(e.get("outputBytes")),
                "shuffle_read_bytes": _int(e.get("shuffleRead")),
                "shuffle_write_bytes": _int(e.get("shuffleWrite")),
                "memory_bytes_spilled": _int(e.get("memoryBytesSpilled")),
                "disk_bytes_spilled": _int(e.get("diskBytesSpilled")),
            }
        )
    return rows


# ---------------------------------------------------------------------------------------- tasks


def parse_task(
    stage_id: int, attempt_id: int, t: Mapping[str, Any], kept_because: str
) -> dict[str, Any]:
    """One task JSON -> a task row."""
    m = _sub(t, "taskMetrics")
    shuffle_read = _sub(m, "shuffleReadMetrics")
    shuffle_write = _sub(m, "shuffleWriteMetrics")
    return {
        "stage_id": stage_id,
        "stage_attempt_id": attempt_id,
        "task_id": _int(t.get("taskId")),
        "index": _int(t.get("index")),
        "attempt": _int(t.get("attempt")),
        "executor_id": _str(t.get("executorId"), 64),
        "host": _str(t.get("host"), 500),
        "status": _str(t.get("status"), 32) or "UNKNOWN",
        "kept_because": kept_because,
        "launch_time_ms": parse_time_ms(t.get("launchTime")),
        "duration_ms": _opt_int(t.get("duration")),
        "executor_run_time_ms": _opt_int(m.get("executorRunTime")),
        "executor_cpu_time_ns": _opt_int(m.get("executorCpuTime")),
        "jvm_gc_time_ms": _opt_int(m.get("jvmGcTime")),
        "input_bytes": _int(_dig(m, "inputMetrics.bytesRead")),
        "shuffle_read_bytes": _int(shuffle_read.get("remoteBytesRead"))
        + _int(shuffle_read.get("localBytesRead")),
        "shuffle_write_bytes": _int(shuffle_write.get("bytesWritten")),
        "shuffle_fetch_wait_ms": _int(shuffle_read.get("fetchWaitTime")),
        "memory_bytes_spilled": _int(m.get("memoryBytesSpilled")),
        "disk_bytes_spilled": _int(m.get("diskBytesSpilled")),
        "error_message": _str(t.get("errorMessage"), 20000),
        "raw": dict(t),
    }


def parse_task_list(
    stage_id: int, attempt_id: int, data: Any, kept_because: str
) -> list[dict[str, Any]]:
    """A ``taskList`` body -> task rows."""
    return [
        parse_task(stage_id, attempt_id, t, kept_because)
        for t in _need_list(data, "taskList")
        if isinstance(t, dict) and t.get("taskId") is not None
    ]


def parse_stage_failed_tasks(stage_id: int, attempt_id: int, data: Any) -> list[dict[str, Any]]:
    """A stage attempt fetched with ``details=true&taskStatus=FAILED`` -> failed task rows."""
    tasks = _need_dict(data, "stage").get("tasks")
    if not isinstance(tasks, dict):
        return []
    return [
        parse_task(stage_id, attempt_id, t, "failed")
        for t in tasks.values()
        if isinstance(t, dict) and t.get("taskId") is not None
    ]


# ---------------------------------------------------------------------------------------- bundle


@dataclass
class AppBundle:
    """Everything fetched for one application, parsed into rows, ready to load."""

    entry: AppEntry
    environment: list[dict[str, Any]] = field(default_factory=list)
    executors: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    distributions: list[dict[str, Any]] = field(default_factory=list)
    stage_executors: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def merge_tasks(self, rows: list[dict[str, Any]]) -> None:
        """Add task rows; a task kept for two reasons is stored once, as 'both'."""
        index = {(t["stage_id"], t["stage_attempt_id"], t["task_id"]): t for t in self.tasks}
        for row in rows:
            key = (row["stage_id"], row["stage_attempt_id"], row["task_id"])
            have = index.get(key)
            if have is None:
                index[key] = row
                self.tasks.append(row)
            elif have["kept_because"] != row["kept_because"]:
                have["kept_because"] = "both"
                have["error_message"] = have["error_message"] or row["error_message"]

    def application_row(self) -> dict[str, Any]:
        """The application row with totals summed over stages, jobs and executors."""
        e = self.entry
        props = {p["name"]: p["value"] for p in self.environment if p["section"] == "spark"}
        non_driver = [x for x in self.executors if not x["is_driver"]]
        return {
            "app_id": e.app_id,
            "attempt_id": e.attempt_id or "",
            "name": e.name,
            "spark_user": e.user,
            "queue": _str(props.get("spark.yarn.queue"), 255),
            "spark_version": e.spark_version,
            "start_time_ms": e.start_time_ms,
            "end_time_ms": e.end_time_ms,
            "duration_ms": e.duration_ms,
            "last_updated_ms": e.last_updated_ms,
            "completed": e.completed,
            "num_jobs": len(self.jobs),
            "num_failed_jobs": sum(1 for j in self.jobs if j["status"] == "FAILED"),
            "num_stages": len(self.stages),
            "num_failed_stages": sum(1 for s in self.stages if s["status"] == "FAILED"),
            "num_tasks": sum(s["num_tasks"] for s in self.stages),
            "num_failed_tasks": sum(s["num_failed_tasks"] for s in self.stages),
            "num_executors": len(non_driver) or len(self.executors),
            "executor_run_time_ms": sum(s["executor_run_time_ms"] for s in self.stages),
            "executor_cpu_time_ns": sum(s["executor_cpu_time_ns"] for s in self.stages),
            "jvm_gc_time_ms": sum(s["jvm_gc_time_ms"] for s in self.stages),
            "input_bytes": sum(s["input_bytes"] for s in self.stages),
            "output_bytes": sum(s["output_bytes"] for s in self.stages),
            "shuffle_read_bytes": sum(s["shuffle_read_bytes"] for s in self.stages),
            "shuffle_write_bytes": sum(s["shuffle_write_bytes"] for s in self.stages),
            "memory_bytes_spilled": sum(s["memory_bytes_spilled"] for s in self.stages),
            "disk_bytes_spilled": sum(s["disk_bytes_spilled"] for s in self.stages),
            "raw": e.raw,
        }
