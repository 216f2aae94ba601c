"""Executor GC: the share of executor task time spent in JVM garbage collection.

**What it measures.** `Σ GC time / Σ task run time` over the executors that ran tasks (in local
mode that is the driver). The executor list's totals are used, or the stages' totals when those
show more GC: the History Server sometimes leaves the executor totals at 0 (seen for the driver in
local mode) while every stage reports its tasks' GC time. Every application is judged; the GC
time (core-hours, and over the task slots for wall time) caps the severity.

**Why it matters.** During a full GC the executor's JVM stops; every task on it makes no
progress. A high GC share usually means the heap is too small for the data each task holds
(large aggregation buffers, caching, wide rows), and it often precedes OutOfMemoryError.

A low GC share is no finding: whether executors have more memory than they need is measured
directly by the executor memory heuristic.

**How to fix.** Give each task more heap: the finding suggests `spark.executor.memory`
(`spark.driver.memory` in local mode, where the driver runs the tasks) half as large again as
now, a step to take and check on the next run, or fewer `spark.executor.cores`. Use more
partitions so each task holds less, cache serialized (`MEMORY_AND_DISK_SER`) or not at all,
prefer DataFrame operations over Python/Scala objects, and consider G1GC tuning (`-XX:+UseG1GC`
is the default on recent JVMs).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.sparkconf import driver_memory_bytes, executor_memory_bytes, is_local_mode
from heuristics.stats import fmt_ms, round2, safe_ratio, task_executors, total_task_cores
from heuristics.thresholds import Thresholds
from heuristics.tuning import fmt_memory_setting, ordered_refs, round_up_512_mib

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE

NAME = "executor_gc"
TITLE = "Executor GC"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: no size gate, no low-GC note, memory setting and stages (issue 19)
INPUTS = frozenset({"executors", "spark_properties", "stages"})

#: The suggested heap is this much larger than the current one: a step, checked on the next run.
HEAP_STEP = 1.5

ADVICE = "Executors spend a large share of task time in garbage collection: tasks need more heap."


@dataclass(frozen=True)
class Params:
    """Parameters of the executor GC heuristic."""

    gc_ratio: Thresholds = param(
        Thresholds(0.08, 0.1, 0.15, 0.2),
        "GC time / task run time over executors (ratio; ascending)",
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
    if run_ms <= 0:
        return no_data("Executors ran no tasks")
    ratio = safe_ratio(gc_ms, run_ms)
    severity = params.gc_ratio.severity_of(ratio)
    title = f"GC took {ratio:.1%} of executor task time ({fmt_ms(gc_ms)} of {fmt_ms(run_ms)})"
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
    impact = Impact(
        wall_seconds=gc_ms / 1000 / total_task_cores(app),
        core_hours=gc_ms / 3_600_000,
        formula="core-hours = Σ executor GC time; wall = that ÷ task slots (GC spread evenly)",
    )
    if severity == NONE:
        return make_result(severity=severity, value=ratio, title=title, details=details)
    props = app.spark_properties
    local = is_local_mode(props) or all(e.is_driver for e in execs)
    setting = "spark.driver.memory" if local else "spark.executor.memory"
    heap = driver_memory_bytes(props) if local else executor_memory_bytes(props)
    wanted = fmt_memory_setting(round_up_512_mib(heap * HEAP_STEP))
    advice = (
        f"{ADVICE} Next run: {setting}={wanted} (half as large again; check GC then), or fewer "
        "concurrent tasks per JVM; more partitions so each task holds less, and no caching of "
        "deserialized objects, help too."
    )
    gc_stages = [(s.jvm_gc_time_ms, s) for s in app.stages if s.jvm_gc_time_ms > 0]
    return make_result(
        severity=severity,
        value=ratio,
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=((setting, wanted),),
        stages=ordered_refs(gc_stages),
    )
