"""``/environment``, ``/allexecutors`` (``/executors``) and ``/jobs`` as the History Server
renders them (Jackson: absent options and nulls left out, dates in GMT)."""

from __future__ import annotations

import re
from typing import Any

from fetcher.eventlog.formats import shs_date
from fetcher.eventlog.params import NotFound
from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.entities import LiveExecutor
from fetcher.eventlog.replay.state import DRIVER
from fetcher.eventlog.replay.status import StatusReplay

#: spark.redaction.regex default, applied by the SHS with its own configuration.
DEFAULT_REDACTION = re.compile(r"(?i)secret|password|token|access[.]?key")
REDACTED = "*********(redacted)"


# ------------------------------------------------------------------------------------- helpers


def _redact(pairs: list[list[str]], pattern: re.Pattern[str]) -> list[list[str]]:
    out = []
    for k, v in pairs:
        if pattern.search(k) or (isinstance(v, str) and pattern.search(v)):
            out.append([k, REDACTED])
        else:
            out.append([k, v])
    return out


def _sorted_pairs(pairs: list[list[str]]) -> list[list[str]]:
    # Scala sortBy(_._1) on Strings: UTF-16 code unit order, stable.
    return sorted(pairs, key=lambda p: p[0].encode("utf-16-be"))


def environment(r: StatusReplay, redaction: re.Pattern[str] = DEFAULT_REDACTION) -> dict[str, Any]:
    env = r.environment
    if env is None:
        raise NotFound("no environment")
    return {
        "runtime": {k: v for k, v in env["runtime"].items() if v is not None},
        "sparkProperties": _sorted_pairs(_redact(env["sparkProperties"], redaction)),
        "hadoopProperties": _sorted_pairs(_redact(env["hadoopProperties"], redaction)),
        "systemProperties": _sorted_pairs(_redact(env["systemProperties"], redaction)),
        "metricsProperties": _sorted_pairs(_redact(env["metricsProperties"], redaction)),
        "classpathEntries": _sorted_pairs(env["classpathEntries"]),
        "resourceProfiles": [r.resource_profiles[k] for k in sorted(r.resource_profiles)],
    }


# ------------------------------------------------------------------------------------ executors


def _app_time(r: StatusReplay) -> int | None:
    start = r.app.start_time or 0
    end = r.app.end_time
    if end == 0:
        return None
    if end < 0:
        return (r.last_update_time or start) - start
    return end - start


def executor_json(r: StatusReplay, ex: LiveExecutor) -> dict[str, Any]:
    total_duration, total_gc = ex.total_duration, ex.total_gc_time
    if ex.executor_id == DRIVER:
        app_time = _app_time(r)
        if app_time is not None:
            total_duration = app_time
        if ex.peaks.is_set:
            total_gc = ex.peaks.v[mx.EXECUTOR_METRICS.index("TotalGCTime")]
    d: dict[str, Any] = {"id": ex.executor_id}
    host_port = ex.host_port if ex.host_port is not None else ex.host
    if host_port is not None:
        d["hostPort"] = host_port
    d.update(
        {
            "isActive": ex.is_active,
            "rddBlocks": ex.rdd_blocks,
            "memoryUsed": ex.memory_used,
            "diskUsed": ex.disk_used,
            "totalCores": ex.total_cores,
            "maxTasks": ex.max_tasks,
            "activeTasks": ex.active_tasks,
            "failedTasks": ex.failed_tasks,
            "completedTasks": ex.completed_tasks,
            "totalTasks": ex.total_tasks,
            "totalDuration": total_duration,
            "totalGCTime": total_gc,
            "totalInputBytes": ex.total_input_bytes,
            "totalShuffleRead": ex.total_shuffle_read,
            "totalShuffleWrite": ex.total_shuffle_write,
            "isBlacklisted": ex.is_excluded,
            "maxMemory": ex.max_memory,
            "addTime": shs_date(ex.add_time),
        }
    )
    if ex.remove_time is not None:
        d["removeTime"] = shs_date(ex.remove_time)
    if ex.remove_reason is not None:
        d["removeReason"] = ex.remove_reason
    d["executorLogs"] = dict(ex.executor_logs)
    if ex.total_on_heap >= 0:
        d["memoryMetrics"] = {
            "usedOnHeapStorageMemory": ex.used_on_heap,
            "usedOffHeapStorageMemory": ex.used_off_heap,
            "totalOnHeapStorageMemory": ex.total_on_heap,
            "totalOffHeapStorageMemory": ex.total_off_heap,
        }
    d["blacklistedInStages"] = sorted(ex.excluded_in_stages)
    if ex.peaks.is_set:
        d["peakMemoryMetrics"] = ex.peaks.as_json()
    d["attributes"] = dict(ex.attributes)
    d["resources"] = dict(ex.resources)
    d["resourceProfileId"] = ex.resource_profile_id
    d["isExcluded"] = ex.is_excluded
    d["excludedInStages"] = sorted(ex.excluded_in_stages)
    return d


def executors(r: StatusReplay, active_only: bool) -> list[dict[str, Any]]:
    """``/allexecutors`` in id order; ``/executors`` (the "active" index, reversed) in reverse."""
    out = []
    for eid in sorted(r.executors, key=lambda s: s.encode("utf-16-be"), reverse=active_only):
        ex = r.executors[eid]
        if eid == "fallback" or (active_only and not ex.is_active):
            continue
        out.append(executor_json(r, ex))
    return out


# ----------------------------------------------------------------------------------------- jobs


def job_json(job: dict[str, Any]) -> dict[str, Any]:
    d = dict(job)
    for k in ("submissionTime", "completionTime"):
        if k in d:
            d[k] = shs_date(d[k])
    return d


def jobs(r: StatusReplay, statuses: list[str]) -> list[dict[str, Any]]:
    wanted = {s.upper() for s in statuses}
    return [
        job_json(r.jobs[j])
        for j in sorted(r.jobs, reverse=True)
        if not wanted or r.jobs[j]["status"] in wanted
    ]
