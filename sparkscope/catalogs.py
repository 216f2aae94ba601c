"""Display catalogs shared by the pages and the API: severity names, metrics and their units,
the key settings, the compared resource figures, the sort keys, and the UTC timestamp format.

Nothing here touches the database; views import it for names and labels without pulling in the
data-access code (`sparkscope.queries`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from heuristics.base import Severity

SEVERITY_NAMES: tuple[str, ...] = tuple(s.name.lower() for s in Severity)


def severity_name(level: int | None) -> str:
    """Lower-case name of a severity level; 'unknown' before the application is analysed."""
    if level is None or not 0 <= level < len(SEVERITY_NAMES):
        return "unknown"
    return SEVERITY_NAMES[level]


def utc_iso(ms: int) -> str:
    """Epoch ms -> '2026-01-02T03:04:05Z' (UTC, seconds precision)."""
    stamp = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


#: Orders of the search page and /api/apps, by the value of their `sort` parameter.
SORT_KEYS: tuple[str, ...] = ("start", "end", "duration", "severity")


@dataclass(frozen=True)
class Metric:
    """One application total: column, label and unit ('ms', 'ns', 'bytes', 'count', 'hours')."""

    key: str
    label: str
    unit: str


APP_METRICS: tuple[Metric, ...] = (
    Metric("duration_ms", "Duration", "ms"),
    Metric("executor_run_time_ms", "Executor run time", "ms"),
    Metric("executor_cpu_time_ns", "Executor CPU time", "ns"),
    Metric("jvm_gc_time_ms", "GC time", "ms"),
    Metric("num_jobs", "Jobs", "count"),
    Metric("num_failed_jobs", "Failed jobs", "count"),
    Metric("num_stages", "Stages", "count"),
    Metric("num_failed_stages", "Failed stages", "count"),
    Metric("num_tasks", "Tasks", "count"),
    Metric("num_failed_tasks", "Failed tasks", "count"),
    Metric("num_executors", "Executors", "count"),
    Metric("input_bytes", "Input", "bytes"),
    Metric("output_bytes", "Output", "bytes"),
    Metric("shuffle_read_bytes", "Shuffle read", "bytes"),
    Metric("shuffle_write_bytes", "Shuffle write", "bytes"),
    Metric("memory_bytes_spilled", "Spill (memory)", "bytes"),
    Metric("disk_bytes_spilled", "Spill (disk)", "bytes"),
    Metric("allocated_core_hours", "Allocated core-hours", "hours"),
    Metric("wasted_core_hours", "Wasted core-hours", "hours"),
)

#: Metrics the history chart can plot, by the value of its `metric` parameter.
HISTORY_METRICS: dict[str, Metric] = {
    "duration": Metric("duration_ms", "Duration", "ms"),
    "input": Metric("input_bytes", "Input bytes", "bytes"),
    "shuffle": Metric("shuffle_read_bytes", "Shuffle read bytes", "bytes"),
    "spill": Metric("memory_bytes_spilled", "Spill (memory bytes)", "bytes"),
    "gc": Metric("jvm_gc_time_ms", "GC time", "ms"),
    "run_time": Metric("executor_run_time_ms", "Executor run time", "ms"),
    "allocated_core_hours": Metric("allocated_core_hours", "Allocated core-hours", "hours"),
    "wasted_core_hours": Metric("wasted_core_hours", "Wasted core-hours", "hours"),
}

#: Spark settings shown as "key configuration" on the application and compare pages.
KEY_CONFIG: tuple[str, ...] = (
    "spark.master",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.driver.memory",
    "spark.driver.cores",
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.maxExecutors",
    "spark.sql.shuffle.partitions",
    "spark.default.parallelism",
    "spark.sql.adaptive.enabled",
    "spark.serializer",
    "spark.yarn.queue",
)


#: Resource figures compared side by side (flattened keys of `resources`).
COMPARE_RESOURCES: tuple[tuple[str, str, str], ...] = (
    ("allocated_core_hours", "Allocated core-hours", "hours"),
    ("used_core_hours", "Used core-hours", "hours"),
    ("cpu_core_hours", "CPU core-hours", "hours"),
    ("wasted_core_hours", "Wasted core-hours", "hours"),
    ("core_efficiency", "Core efficiency", "ratio"),
    ("allocated_gb_hours", "Allocated GB-hours", "hours"),
    ("used_gb_hours", "Used GB-hours", "hours"),
    ("wasted_gb_hours", "Wasted GB-hours", "hours"),
    ("memory_efficiency", "Memory efficiency", "ratio"),
    ("executors", "Executors counted", "count"),
    ("wait.to_first_executor_s", "Wait: start to first executor", "seconds"),
    ("wait.driver_only_s", "Wait: driver only", "seconds"),
    ("wait.stage_scheduling_delay_s", "Wait: stage scheduling delay", "seconds"),
    ("cost.allocated_cost", "Allocated cost", "money"),
    ("cost.wasted_cost", "Wasted cost", "money"),
)
