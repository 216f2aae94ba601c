"""Driver GC: the share of time the driver JVM spent in garbage collection.

**What it measures.** In cluster mode, the driver entry's GC time against the application's
duration; the History Server usually reports 0 there, so expect a finding only when it does
report GC. In local mode the driver *is* the executor: its GC is the executor GC finding's, and
this heuristic says so instead of reporting it twice. The GC time caps the severity (a paused
driver stalls the whole application, so its wall-time cost is the whole GC time).

**Why it matters.** A driver stuck in GC stops scheduling: no new tasks start and executors idle.
Typical causes are `collect()` or `toPandas()` of large results, big broadcast variables built
on the driver, or very many tasks and stages whose metadata the driver keeps.

**How to fix.** Avoid pulling large results to the driver (write them out instead), raise
`spark.driver.memory` (the finding suggests half as large again), lower
`spark.sql.autoBroadcastJoinThreshold` if broadcasts are large, and reduce the number of tasks
(fewer, larger partitions) when the UI state is the problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, make_result, no_data
from heuristics.sparkconf import driver_memory_bytes, is_local_mode
from heuristics.stats import fmt_ms, safe_ratio
from heuristics.thresholds import Thresholds
from heuristics.tuning import fmt_memory_setting, round_up_512_mib

NAME = "driver_gc"
TITLE = "Driver GC"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: local-cluster is not local mode; 3: no size gate, local mode left to executor GC
INPUTS = frozenset({"duration_ms", "executors", "spark_properties"})

ADVICE = (
    "The driver spends much of its time in garbage collection. Avoid collect()/toPandas() of "
    "large results, raise spark.driver.memory, and keep broadcast variables small."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the driver GC heuristic."""

    gc_ratio: Thresholds = param(
        Thresholds(0.08, 0.1, 0.15, 0.2),
        "driver GC time / application duration, cluster mode (ratio; ascending)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the driver's GC share."""
    driver = next((e for e in app.executors if e.is_driver), None)
    if driver is None:
        return no_data("No driver entry in the executor list")
    if is_local_mode(app.spark_properties) or not any(not e.is_driver for e in app.executors):
        return no_data("Local mode: the driver ran the tasks, so its GC is the executor GC finding")
    base_ms = app.duration_ms
    if base_ms <= 0:
        return no_data("The application has no duration")
    gc_ms = driver.total_gc_time_ms
    ratio = safe_ratio(gc_ms, base_ms)
    severity = params.gc_ratio.severity_of(ratio)
    title = (
        f"Driver GC took {ratio:.1%} of application duration ({fmt_ms(gc_ms)} of {fmt_ms(base_ms)})"
    )
    details = Details(
        ("mode", "gc_time_ms", "base", "base_ms"),
        (("cluster", gc_ms, "application duration", base_ms),),
    )
    impact = Impact(
        wall_seconds=gc_ms / 1000,
        core_hours=gc_ms / 3_600_000,
        formula="core-hours = driver GC time; wall = the whole GC time (a paused driver schedules nothing)",
    )
    wanted = fmt_memory_setting(round_up_512_mib(driver_memory_bytes(app.spark_properties) * 1.5))
    return make_result(
        severity=severity,
        value=ratio,
        title=title,
        details=details,
        advice=f"{ADVICE} Next run: spark.driver.memory={wanted}, then check GC again.",
        impact=impact,
        conf=(("spark.driver.memory", wanted),),
    )
