"""Stage attempts, their task quantile distributions, per-executor summaries and task rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fetcher.parse.fields import (
    _int,
    _need_dict,
    _need_list,
    _opt_int,
    _str,
    _sub,
    parse_time_ms,
)

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

# --------------------------------------------------------------------------------------- stages


#: (SHS name, its field within that or None, our name): the names split at their dot once.
Paths = list[tuple[str, str | None, str]]


def _split(names: Mapping[str, str]) -> Paths:
    out: Paths = []
    for shs, ours in names.items():
        first, _, second = shs.partition(".")
        assert "." not in second
        out.append((first, second or None, ours))
    return out


_TASK_PATHS = _split(_TASK_METRICS)
_EXECUTOR_PATHS = _split(_EXECUTOR_METRICS)


def flatten_distribution(data: Mapping[str, Any], paths: Paths) -> dict[str, list[float]]:
    """A quantile summary (nested SHS names) -> {our name: values}."""
    out: dict[str, list[float]] = {}
    for first, second, ours in paths:
        values = data.get(first)
        if second is not None:
            values = values.get(second) if isinstance(values, dict) else None
        if isinstance(values, list):
            try:
                out[ours] = list(map(float, values))
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
        "quantiles": list(map(float, quantiles)),
        "metrics": flatten_distribution(data, _TASK_PATHS),
    }


#: Members of a stage kept out of its raw JSON: stored as distribution rows, or not at all.
_NOT_RAW = ("taskMetricsDistributions", "executorMetricsDistributions", "tasks")


def parse_stages(data: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``/stages`` (optionally withSummaries) -> (stage rows, distribution rows)."""
    stages: dict[tuple[int, int], dict[str, Any]] = {}
    dists: dict[tuple[int, int], dict[str, Any]] = {}
    for s in _need_list(data, "stages"):
        if not isinstance(s, dict) or s.get("stageId") is None:
            continue
        key = (_int(s["stageId"]), _int(s.get("attemptId")))
        raw = s.copy()  # a C copy, then three removals: cheaper than filtering every key
        for bulky in _NOT_RAW:
            raw.pop(bulky, None)
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
                flatten_distribution(exec_raw, _EXECUTOR_PATHS)
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
        "input_bytes": _int(_sub(m, "inputMetrics").get("bytesRead")),
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
