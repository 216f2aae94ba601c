"""Per-application bodies: environment, executors, jobs, and the bundle that holds them all."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from fetcher.parse.entry import AppEntry
from fetcher.parse.fields import _int, _need_dict, _need_list, _opt_int, _str, _sub, parse_time_ms
from sparkscope.redaction import redact, redact_text

_ENV_SECTIONS = {
    "sparkProperties": "spark",
    "hadoopProperties": "hadoop",
    "systemProperties": "system",
    "metricsProperties": "metrics",
}


# ---------------------------------------------------------------------------------- environment

#: What a property pair may be, made once: ``list | tuple`` written in the loop makes a new union
#: type at every pair.
_PAIR = list | tuple


def redact_properties(rows: list[dict[str, Any]], pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    """Replace, in place, the values whose key or value matches the redaction pattern; the rows."""
    redacted = _redactor(pattern)
    for row in rows:
        row["value"] = redacted(row["name"], row["value"])
    return rows


@lru_cache(maxsize=8)
def _redactor(pattern: re.Pattern[str]) -> Callable[[str, str | None], str | None]:
    """:func:`redact` with ``pattern``, remembered: most properties of an application are those
    of every other application of its cluster (the defaults file, the JVM's system properties),
    and :func:`redact` depends on its arguments only. The bound keeps memory flat. Looked up
    once per application: a compiled pattern's hash is computed anew each time, over its code."""
    return lru_cache(maxsize=8192)(partial(redact, pattern=pattern))


def parse_environment(
    data: Any, redaction: re.Pattern[str], hadoop: bool = False
) -> list[dict[str, Any]]:
    """``/environment`` -> property rows (section, name, value), secrets redacted."""
    data = _need_dict(data, "environment")
    # each value redacted as its row is made (a property listed twice is redacted twice, its
    # last row kept): no second pass over the rows
    redacted = _redactor(redaction)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, section in _ENV_SECTIONS.items():
        if section == "hadoop" and not hadoop:
            continue
        for pair in data.get(key) or []:
            if not isinstance(pair, _PAIR) or len(pair) < 2 or not isinstance(pair[0], str):
                continue
            name = pair[0][:500]
            value = None if pair[1] is None else str(pair[1])
            rows[(section, name)] = {
                "section": section,
                "name": name,
                "value": redacted(name, value),
            }
    runtime = data.get("runtime")
    if isinstance(runtime, dict):
        for name, value in runtime.items():
            rows[("runtime", name[:500])] = {
                "section": "runtime",
                "name": name[:500],
                "value": redacted(name[:500], None if value is None else str(value)),
            }
    return list(rows.values())


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


# ---------------------------------------------------------------------------------------- bundle

_UNSEEN: Any = object()  # a text AppBundle.redact has not masked yet
_NO_RAW: dict[str, Any] = {}  # (never written: it holds no text)

#: Free-text fields that may quote a secret (a JDBC URL in an error, a token in a description):
#: per kind of row, (row field, the same text in the row's raw JSON).
_TEXT_FIELDS: dict[str, tuple[tuple[str | None, str], ...]] = {
    "executors": (("remove_reason", "removeReason"),),
    "jobs": (("name", "name"), ("description", "description")),
    "stages": (
        ("name", "name"),
        ("failure_reason", "failureReason"),
        (None, "description"),  # (not "details": call sites in the job's code)
    ),
    "tasks": (("error_message", "errorMessage"),),
}


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
    #: the SQL part (fetcher.parse.sql.rows): one status row (none when not fetched), the
    #: executions, their plan nodes and their stage links
    sql_fetch: list[dict[str, Any]] = field(default_factory=list)
    sql_executions: list[dict[str, Any]] = field(default_factory=list)
    sql_nodes: list[dict[str, Any]] = field(default_factory=list)
    sql_stages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def sql_error(self) -> str | None:
        """Why the SQL part failed (None when it did not)."""
        failed = [r for r in self.sql_fetch if r["status"] == "failed"]
        return str(failed[0]["error"] or "failed") if failed else None

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

    def redact(self, pattern: re.Pattern[str]) -> None:
        """Mask secrets in the free-text fields of every row and of its raw JSON, in place
        (properties are redacted as they are parsed)."""
        # A row's text is also in its raw JSON, and names repeat (one per stage attempt): each
        # text is masked once per application. The lookup is inline, not behind a function per
        # field: most fields are empty or met before.
        masked: dict[str, str | None] = {}
        seen = masked.get

        def mask(text: Any) -> Any:
            out = redact_text(text, pattern)
            if type(text) is str:
                masked[text] = out
            return out

        for kind, fields in _TEXT_FIELDS.items():
            for row in getattr(self, kind):
                raw = row.get("raw")
                if not isinstance(raw, dict):
                    raw = _NO_RAW
                for field_name, raw_key in fields:
                    if field_name is not None and (text := row.get(field_name)):
                        out = seen(text, _UNSEEN) if type(text) is str else _UNSEEN
                        row[field_name] = mask(text) if out is _UNSEEN else out
                    text = raw.get(raw_key)
                    if type(text) is str:
                        out = seen(text, _UNSEEN)
                        raw[raw_key] = mask(text) if out is _UNSEEN else out
                    elif text is not None and isinstance(text, str):
                        raw[raw_key] = mask(text)

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
