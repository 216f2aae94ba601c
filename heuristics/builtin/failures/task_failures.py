"""Task failures: the share of task attempts that failed, and why.

**What it measures.** `failed task attempts / (completed + failed)` summed over stages, and a
classification of the stored failed tasks' error messages into causes:

- **out of memory**: `OutOfMemoryError`, `Java heap space`, `GC overhead limit exceeded`;
- **container killed**: `Container killed`, `exceeding memory limits`, `killed by YARN`, exit
  codes 137 or 143 (the cluster manager killed the JVM, usually for using more memory than
  the container allows);
- **fetch failure**: `FetchFailed`, `MetadataFetchFailedException`, `Missing an output location
  for shuffle` (shuffle output of a lost executor could not be read);
- **other**: anything else, usually an exception from user code or bad input data.

**Why it matters.** Each failed attempt wastes its run time and is retried
(`spark.task.maxFailures`, 4 by default); a task that fails every attempt fails the job.

**Cost.** The run time of the failed attempts caps the severity: a few failed attempts in a
seconds-long application are a LOW note, the same share of failures costing hours is not.

**How to fix.** See the advice for each cause found in the details. For out-of-memory errors the
finding suggests a heap half as large again (`spark.executor.memory`, `spark.driver.memory` in
local mode); for containers killed by the cluster manager, a larger
`spark.executor.memoryOverhead` (half as large again, at least 1 GiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.failure_text import keep_message
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.sparkconf import (
    GIB,
    driver_memory_bytes,
    executor_memory_bytes,
    executor_overhead_bytes,
    is_local_mode,
)
from heuristics.thresholds import Thresholds
from heuristics.tuning import fmt_memory_setting, ordered_refs, round_up_512_mib

NAME = "task_failures"
TITLE = "Task failures"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: whole failure messages, NONE titles (issue 12); 3: settings, stages (issue 19)
INPUTS = frozenset({"executors", "spark_properties", "stages", "tasks"})

OOM = "out of memory"
CONTAINER = "container killed"
FETCH = "fetch failure"
OTHER = "other"

# Matched against the lower-cased message, in this order (the first cause found wins). Plain
# substring tests: error messages carry whole stack traces, and `in` scans them far faster than
# a case-insensitive regex does.
_MARKERS = (
    (OOM, ("outofmemoryerror", "java heap space", "gc overhead limit")),
    (CONTAINER, ("container killed", "exceeding memory limits", "killed by yarn")),
)
_EXIT_CODE = re.compile(r"exit code:? ?(137|143)\b|exit status:? ?(137|143)\b|exitcode=(137|143)\b")
_FETCH_MARKERS = (
    "fetchfailed",
    "metadatafetchfailedexception",
    "missing an output location for shuffle",
)

CAUSE_ADVICE = {
    OOM: (
        "Out of memory: give each task more heap (spark.executor.memory up or "
        "spark.executor.cores down) or use more partitions so each task holds less."
    ),
    CONTAINER: (
        "Container killed: the JVM used more than its container allows; raise "
        "spark.executor.memoryOverhead (off-heap, Python workers, native buffers)."
    ),
    FETCH: (
        "Fetch failure: shuffle output was lost with an executor; find why executors died, "
        "enable the external shuffle service or decommissioning, and avoid huge shuffle blocks."
    ),
    OTHER: "Other errors: read the error message; usually an exception in user code or bad data.",
}


def classify(message: str | None) -> str:
    """The failure cause of a task error message (one of OOM, CONTAINER, FETCH, OTHER)."""
    if not message:
        return OTHER
    text = message.lower()
    for cause, markers in _MARKERS:
        if any(m in text for m in markers):
            return cause
    # exit code 137 (SIGKILL) or 143 (SIGTERM) of the executor JVM: killed by the cluster manager
    if ("137" in text or "143" in text) and _EXIT_CODE.search(text):
        return CONTAINER
    if any(m in text for m in _FETCH_MARKERS):
        return FETCH
    return OTHER


@dataclass(frozen=True)
class Params:
    """Parameters of the task failures heuristic."""

    failed_task_rate: Thresholds = param(
        Thresholds(0.02, 0.05, 0.1, 0.2),
        "failed task attempts / finished task attempts; any failure is at least LOW (ratio; ascending)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the share of failed task attempts and classify their causes."""
    if not app.stages:
        return no_data("No stages recorded")
    failed_n = sum(s.num_failed_tasks for s in app.stages)
    total_n = failed_n + sum(s.num_complete_tasks for s in app.stages)
    if total_n == 0:
        return no_data("No finished tasks recorded")
    rate = failed_n / total_n
    severity = params.failed_task_rate.severity_of(rate)
    if failed_n:
        severity = max(severity, Severity.LOW)
    failed_rows = [t for t in app.tasks if t.status.upper() == "FAILED"]
    by_cause: dict[str, list] = {}
    for task in failed_rows:
        by_cause.setdefault(classify(task.error_message), []).append(task)
    rows = []
    for cause in (OOM, CONTAINER, FETCH, OTHER):
        tasks = by_cause.get(cause)
        if not tasks:
            continue
        first = tasks[0]
        rows.append(
            (cause, len(tasks), first.stage_id, first.task_id, keep_message(first.error_message))
        )
    causes = [r[0] for r in rows]
    title = f"{failed_n} of {total_n} task attempts failed ({rate:.1%})"
    if causes:
        title += f"; causes: {', '.join(causes)}"
    advice = " ".join(CAUSE_ADVICE[c] for c in causes) or CAUSE_ADVICE[OTHER]
    stored_ms = sum(
        t.executor_run_time_ms if t.executor_run_time_ms is not None else (t.duration_ms or 0)
        for t in failed_rows
    )
    # Not every failed attempt is stored: each stage's failed attempts at its mean attempt time.
    estimated_ms = sum(
        s.num_failed_tasks * s.executor_run_time_ms / (s.num_failed_tasks + s.num_complete_tasks)
        for s in app.stages
        if s.num_failed_tasks > 0
    )
    run_ms = max(stored_ms, estimated_ms)
    impact = Impact(
        wall_seconds=None,
        core_hours=run_ms / 3_600_000,
        formula=(
            "core-hours = run time of the failed task attempts: the stored ones' own, or each "
            "stage's failed attempts × its mean attempt time when that is more (retries "
            "overlap other work, so wall time is not estimated)"
        ),
    )
    details = Details(
        ("cause", "failed_tasks", "example_stage", "example_task", "example_error"), tuple(rows)
    )
    return make_result(
        severity=severity,
        value=rate,
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=_memory_settings(app, set(causes)),
        stages=ordered_refs(
            ((s.num_failed_tasks, s.executor_run_time_ms), s)
            for s in app.stages
            if s.num_failed_tasks > 0
        ),
    )


def _memory_settings(app: AppData, causes: set[str]) -> tuple[tuple[str, str], ...]:
    """More heap for out-of-memory errors, more overhead for killed containers."""
    props = app.spark_properties
    local = is_local_mode(props) or all(e.is_driver for e in app.executors)
    conf = []
    if OOM in causes:
        setting = "spark.driver.memory" if local else "spark.executor.memory"
        heap = driver_memory_bytes(props) if local else executor_memory_bytes(props)
        conf.append((setting, fmt_memory_setting(round_up_512_mib(heap * 1.5))))
    if CONTAINER in causes and not local:
        wanted = max(GIB, executor_overhead_bytes(props) * 1.5)
        conf.append(("spark.executor.memoryOverhead", fmt_memory_setting(round_up_512_mib(wanted))))
    return tuple(conf)
