"""Executor memory: peak JVM memory used against the memory configured for executors.

Executors without peak metrics (missing, or reported as 0 as the SHS does when metrics were not
polled) are left out; with none left the finding is NONE.

**What it measures.** For the executors that ran tasks, the peak JVM heap plus off-heap memory
(the History Server's `peakMemoryMetrics`) divided by the memory reserved per executor:
`spark.executor.memory` (default 1g) plus `spark.executor.memoryOverhead` (default max(384 MiB,
10%)). In local mode the driver runs the tasks, so the driver's settings are used. Heap and
off-heap together are compared with heap setting plus overhead because off-heap memory
(metaspace, code cache, direct buffers) lives in the overhead, not in the heap setting. Two
findings come from the same ratio:

- **near the limit** (ratio high): executors risk OutOfMemoryError or heavy GC. Its cost is
  the GC time of those executors (a JVM near its limit collects often), which caps the severity;
  the OutOfMemoryErrors themselves are the task failures finding's.
- **over-provisioned** (ratio low): the cluster reserves memory the application never uses,
  which blocks other applications and costs money. Judged on a cluster only (in local mode
  nothing is reserved for others), whatever the executors' size. Its cost is the idle memory expressed as the core-hours it keeps from being scheduled:
  idle GiB-hours ÷ the executor's GiB per core.

The finding suggests settings: the heap (`spark.executor.memory`, or `spark.driver.memory` in
local mode) as peak heap × 1.25 rounded up to 512 MiB, and `spark.executor.memoryOverhead` when
the off-heap peak comes near it (never lowered for Python applications, whose Python workers live
in the overhead and are not in the JVM's metrics).

**How to fix.** Near the limit: raise the heap to the suggested size or lower
`spark.executor.cores`, use more partitions. Over-provisioned: set `spark.executor.memory` to the
suggested size, or run more cores per executor to use the memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.sparkconf import (
    MIB,
    MIN_OVERHEAD_BYTES,
    driver_memory_bytes,
    driver_overhead_bytes,
    executor_cores,
    executor_memory_bytes,
    executor_overhead_bytes,
    is_local_mode,
)
from heuristics.stats import fmt_bytes, round2, task_executors, total_task_cores
from heuristics.thresholds import DESCENDING, Thresholds
from heuristics.tuning import fmt_memory_setting, is_pyspark

NAME = "executor_memory"
TITLE = "Executor memory"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: local-cluster is not local mode; 3: costs, settings, no waste in local mode
INPUTS = frozenset(
    {"end_time_ms", "executors", "jobs", "spark_properties", "stages", "start_time_ms"}
)

ROUND_TO_BYTES = 512 * MIB


@dataclass(frozen=True)
class Params:
    """Parameters of the executor memory heuristic."""

    near_limit_ratio: Thresholds = param(
        Thresholds(0.8, 0.9, 0.95, 1.0),
        "peak JVM heap + off-heap / configured executor memory, near the limit (ratio; ascending)",
    )
    over_provisioned_ratio: Thresholds = param(
        Thresholds(0.5, 0.35, 0.2, 0.1, DESCENDING),
        "peak JVM heap + off-heap / configured executor memory, over-provisioned (ratio; descending)",
    )
    suggested_headroom: float = param(
        1.25,
        "suggested size = peak x this, rounded up to 512 MiB (factor)",
        minimum=1.0,
    )


def suggested_memory_bytes(peak_bytes: int, headroom: float = 1.25) -> int:
    """peak × headroom rounded up to a multiple of 512 MiB."""
    return max(1, math.ceil(peak_bytes * headroom / ROUND_TO_BYTES)) * ROUND_TO_BYTES


def evaluate(app: AppData, params: Params) -> Outcome:
    """Compare peak executor JVM memory with the configured executor memory."""
    # A heap peak of 0 is what the SHS reports when no metrics were polled (often local mode).
    execs = [e for e in task_executors(app) if e.peak_jvm_heap_bytes]
    if not execs:
        return no_data("No peak memory metrics")
    local = is_local_mode(app.spark_properties) or all(e.is_driver for e in execs)
    props = app.spark_properties
    if local:
        configured = driver_memory_bytes(props)
        overhead = driver_overhead_bytes(props)
        setting = "spark.driver.memory"
    else:
        configured = executor_memory_bytes(props)
        overhead = executor_overhead_bytes(props)
        setting = "spark.executor.memory"
    reserved = configured + overhead
    peaks = [(e, (e.peak_jvm_heap_bytes or 0) + (e.peak_jvm_offheap_bytes or 0)) for e in execs]
    _, peak = max(peaks, key=lambda p: p[1])
    peak_heap = max(e.peak_jvm_heap_bytes or 0 for e in execs)
    peak_offheap = max(e.peak_jvm_offheap_bytes or 0 for e in execs)
    ratio = peak / reserved if reserved else math.inf
    suggested = suggested_memory_bytes(peak, params.suggested_headroom)
    heap = suggested_memory_bytes(peak_heap, params.suggested_headroom)
    near = params.near_limit_ratio.severity_of(ratio)
    waste = Severity.NONE
    if not local:
        waste = params.over_provisioned_ratio.severity_of(ratio)
    severity = max(near, waste)
    usage = (
        f"Peak executor memory {fmt_bytes(peak)} is {ratio:.0%} of "
        f"{setting} + overhead = {fmt_bytes(reserved)}"
    )
    conf: list[tuple[str, str]] = []
    if near >= waste and near > Severity.NONE:
        title = f"{usage}: near the limit"
        conf.append((setting, fmt_memory_setting(max(heap, configured))))
        if not local and peak_offheap > 0.8 * overhead:
            wanted = max(overhead, peak_offheap * params.suggested_headroom)
            conf.append(("spark.executor.memoryOverhead", fmt_memory_setting(wanted)))
        advice = (
            f"Executors run close to their memory limit. Next run: "
            f"{', '.join(f'{k}={v}' for k, v in conf)}, or lower spark.executor.cores, or use "
            "more partitions."
        )
        gc_ms = sum(e.total_gc_time_ms for e in execs) or sum(s.jvm_gc_time_ms for s in app.stages)
        impact = Impact(
            wall_seconds=gc_ms / 1000 / total_task_cores(app),
            core_hours=gc_ms / 3_600_000,
            formula=(
                "the GC time of the executors near their limit: core-hours = Σ GC time, wall = "
                "that ÷ task slots (the risk of OutOfMemoryError is not a measured cost)"
            ),
        )
    elif waste > Severity.NONE:
        title = f"{usage}: over-provisioned, suggest {fmt_bytes(suggested)}"
        conf.append((setting, fmt_memory_setting(heap)))
        if not is_pyspark(app) and peak_offheap * params.suggested_headroom < overhead:
            wanted = max(MIN_OVERHEAD_BYTES, peak_offheap * params.suggested_headroom)
            conf.append(("spark.executor.memoryOverhead", fmt_memory_setting(wanted)))
        lifetime_ms = sum(
            max(
                0,
                (e.remove_time_ms or app.end_time_ms or 0)
                - (e.add_time_ms or app.start_time_ms or 0),
            )
            for e in execs
        )
        idle_gib = max(0, reserved - suggested) / 1024**3
        gib_hours = idle_gib * lifetime_ms / 3_600_000
        cores = executor_cores(props) or max(1, max(e.total_cores for e in execs))
        gib_per_core = reserved / 1024**3 / max(1, cores)
        advice = (
            f"Executors use a small part of their memory. Next run: "
            f"{', '.join(f'{k}={v}' for k, v in conf)}, or give each executor more cores."
        )
        impact = Impact(
            None,
            gib_hours / gib_per_core if gib_per_core > 0 else None,
            "idle memory = (memory + overhead − suggested) × Σ executor lifetime = "
            f"{gib_hours:.1f} GiB-hours, as the core-hours it keeps from being scheduled "
            f"(÷ {gib_per_core:.1f} GiB per core)",
        )
    else:
        title = usage
        advice = ""
        impact = None
    details = Details(
        (
            "executor",
            "peak_jvm_heap_bytes",
            "peak_jvm_offheap_bytes",
            "peak_total_bytes",
            "reserved_bytes",
            "ratio",
            "suggested_bytes",
        ),
        tuple(
            (
                e.executor_id,
                e.peak_jvm_heap_bytes,
                e.peak_jvm_offheap_bytes,
                p,
                reserved,
                round2(p / reserved) if reserved else None,
                suggested_memory_bytes(p, params.suggested_headroom),
            )
            for e, p in peaks
        ),
    )
    return make_result(
        severity=severity,
        value=ratio,
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=conf,
    )
