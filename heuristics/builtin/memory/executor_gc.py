"""Executor GC: the share of executor task time spent in JVM garbage collection.

**What it measures.** `Σ GC time / Σ task run time` over the executors that ran tasks (in local
mode that is the driver). The executor list's totals are used, or the stages' totals when those
show more GC: the History Server sometimes leaves the executor totals at 0 (seen for the driver in
local mode) while every stage reports its tasks' GC time. Applications with little total task
time are not judged.

**Why it matters.** During a full GC the executor's JVM stops; every task on it makes no
progress. A high GC share usually means the heap is too small for the data each task holds
(large aggregation buffers, caching, wide rows), and it often precedes OutOfMemoryError.

A *very low* GC share on a long application is reported only as a LOW note: the executors may
have more memory than they need (see the executor memory heuristic).

**How to fix.** Give each task more heap (more `spark.executor.memory`, or fewer
`spark.executor.cores`), use more partitions so each task holds less, cache serialized
(`MEMORY_AND_DISK_SER`) or not at all, prefer DataFrame operations over Python/Scala objects,
and consider G1GC tuning (`-XX:+UseG1GC` is the default on recent JVMs).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import (
    DESCENDING,
    Details,
    Impact,
    Outcome,
    Severity,
    Thresholds,
    make_result,
    no_data,
)
from heuristics.stats import fmt_ms, round2, safe_ratio, task_executors, total_task_cores

NAME = "executor_gc"
TITLE = "Executor GC"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = frozenset({"executors", "stages"})

ADVICE = (
    "Executors spend a large share of task time in garbage collection. Give each task more heap "
    "(spark.executor.memory up or spark.executor.cores down), use more partitions, and avoid "
    "caching deserialized objects."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the executor GC heuristic."""

    gc_ratio: Thresholds = param(
        Thresholds(0.08, 0.1, 0.15, 0.2),
        "GC time / task run time over executors (ratio; ascending)",
    )
    gc_ratio_low: Thresholds = param(
        Thresholds(0.01, 0.005, 0.002, 0.001, DESCENDING),
        "GC time / task run time, suspiciously low; reported at most as LOW (ratio; descending)",
    )
    min_total_run_time_ms: int = param(
        30 * 60 * 1000,
        "gate: total executor task time below this is not judged (ms; 30 min)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the share of executor run time spent in GC."""
    execs = task_executors(app)
    if not execs:
        return no_data("No executor metrics available")
    run_ms = sum(e.total_duration_ms for e in execs)
    gc_ms = sum(e.total_gc_time_ms for e in execs)
    stage_gc_ms = sum(s.jvm_gc_time_ms for s in app.stages)
    source = "executors"
    if stage_gc_ms > gc_ms:
        run_ms = sum(s.executor_run_time_ms for s in app.stages)
        gc_ms = stage_gc_ms
        source = "stages"
    if run_ms < max(1, params.min_total_run_time_ms):
        return no_data(
            f"Executors ran tasks for {fmt_ms(run_ms)}, below the "
            f"{fmt_ms(params.min_total_run_time_ms)} needed to judge GC",
        )
    ratio = safe_ratio(gc_ms, run_ms)
    severity = params.gc_ratio.severity_of(ratio)
    low_note = False
    if severity == Severity.NONE and params.gc_ratio_low.severity_of(ratio) > Severity.NONE:
        severity = Severity.LOW
        low_note = True
    title = f"GC took {ratio:.1%} of executor task time ({fmt_ms(gc_ms)} of {fmt_ms(run_ms)})"
    if low_note:
        title += "; unusually low, executors may be over-provisioned"
    rows: tuple[tuple[object, ...], ...] = tuple(
        (
            e.executor_id,
            e.total_duration_ms,
            e.total_gc_time_ms,
            round2(safe_ratio(e.total_gc_time_ms, e.total_duration_ms)),
        )
        for e in execs
    )
    if source == "stages":
        rows = tuple(
            (
                f"stage {s.stage_id}",
                s.executor_run_time_ms,
                s.jvm_gc_time_ms,
                round2(safe_ratio(s.jvm_gc_time_ms, s.executor_run_time_ms)),
            )
            for s in app.stages
            if s.jvm_gc_time_ms > 0
        )
    details = Details(
        ("source", "task_time_ms", "gc_time_ms", "gc_ratio"),
        rows,
    )
    if not low_note:
        impact = Impact(
            wall_seconds=gc_ms / 1000 / total_task_cores(app),
            core_hours=gc_ms / 3_600_000,
            formula="core-hours = Σ executor GC time; wall = that ÷ task slots (GC spread evenly)",
        )
    else:
        impact = Impact(None, None, "a low GC share costs nothing by itself; cannot be estimated")
    return make_result(
        severity=severity,
        value=ratio,
        title=title,
        details=details,
        advice=ADVICE,
        impact=impact,
    )
