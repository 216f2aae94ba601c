"""Display catalogs shared by the pages and the API: severity names, metrics and their units,
the key settings, the compared resource figures and the sort keys.

Nothing here touches the database; views import it for names and labels without pulling in the
data-access code (`sparkscope.queries`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Severity names come from the one presentation vocabulary (sparkscope.present.display), re-exported here.

#: Orders of the search page and /api/apps, by the value of their `sort` parameter.
SORT_KEYS: tuple[str, ...] = ("start", "end", "duration", "severity", "impact", "waste")


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
_APP_METRIC = {m.key: m for m in APP_METRICS}
#: Application totals a history chart can plot, by their ``metric=`` name; labelled as everywhere.
HISTORY_METRICS: dict[str, Metric] = {
    name: _APP_METRIC[key]
    for name, key in (
        ("duration", "duration_ms"),
        ("input", "input_bytes"),
        ("shuffle", "shuffle_read_bytes"),
        ("spill", "memory_bytes_spilled"),
        ("gc", "jvm_gc_time_ms"),
        ("run_time", "executor_run_time_ms"),
        ("allocated_core_hours", "allocated_core_hours"),
        ("wasted_core_hours", "wasted_core_hours"),
    )
}

#: What a history chart can put on its x axis, by the value of its ``x=`` parameter: the label
#: its title and axis read ("Duration by input size") and the unit of the values.
HISTORY_X: dict[str, tuple[str, str]] = {
    "start": ("start time", "date"),
    "input": ("input size", "bytes"),
    "executors": ("executors", "count"),
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
