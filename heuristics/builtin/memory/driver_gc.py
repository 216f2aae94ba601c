"""Driver GC: the share of time the driver JVM spent in garbage collection.

**What it measures.** The History Server only fills the driver's GC time when the driver runs
tasks, i.e. in local mode. There the driver *is* the executor, and this heuristic rates its GC
time against its task run time (the same measure as executor GC, on the driver entry). In
cluster mode it rates the driver entry's GC time against the application's duration; the SHS
usually reports 0 there, so expect a finding only when it does report GC.

**Why it matters.** A driver stuck in GC stops scheduling: no new tasks start and executors idle.
Typical causes are `collect()` or `toPandas()` of large results, big broadcast variables built
on the driver, or very many tasks and stages whose metadata the driver keeps.

**How to fix.** Avoid pulling large results to the driver (write them out instead), raise
`spark.driver.memory`, lower `spark.sql.autoBroadcastJoinThreshold` if broadcasts are large, and
reduce the number of tasks (fewer, larger partitions) when the UI state is the problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Thresholds, make_result, no_data
from heuristics.sparkconf import is_local_mode
from heuristics.stats import fmt_ms, safe_ratio

NAME = "driver_gc"
TITLE = "Driver GC"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: local-cluster[n,c,m] masters are not local mode
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
        "driver GC time / driver task time (local mode) or application duration (cluster) (ratio; ascending)",
    )
    min_duration_ms: int = param(
        10 * 60 * 1000,
        "gate: the denominator above must reach this (ms; 10 min)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the driver's GC share."""
    driver = next((e for e in app.executors if e.is_driver), None)
    if driver is None:
        return no_data("No driver entry in the executor list")
    local = is_local_mode(app.spark_properties) or not any(not e.is_driver for e in app.executors)
    base_ms = driver.total_duration_ms if local else app.duration_ms
    base_name = "driver task time" if local else "application duration"
    if base_ms < max(1, params.min_duration_ms):
        return no_data(
            f"The {base_name} ({fmt_ms(base_ms)}) is below the "
            f"{fmt_ms(params.min_duration_ms)} needed to judge driver GC",
        )
    gc_ms = driver.total_gc_time_ms
    ratio = safe_ratio(gc_ms, base_ms)
    severity = params.gc_ratio.severity_of(ratio)
    title = f"Driver GC took {ratio:.1%} of {base_name} ({fmt_ms(gc_ms)} of {fmt_ms(base_ms)})"
    details = Details(
        ("mode", "gc_time_ms", "base", "base_ms"),
        (("local" if local else "cluster", gc_ms, base_name, base_ms),),
    )
    # In cluster mode a stalled driver stalls the whole application; in local mode tasks run on
    # driver cores, so GC stalls them like executor GC.
    cores = max(1, driver.total_cores) if local else 1
    impact = Impact(
        wall_seconds=gc_ms / 1000 / cores,
        core_hours=gc_ms / 3_600_000,
        formula=(
            "core-hours = driver GC time; wall = that ÷ driver cores in local mode, the whole "
            "GC time in cluster mode (a paused driver schedules nothing)"
        ),
    )
    return make_result(
        severity=severity,
        value=ratio,
        title=title,
        details=details,
        advice=ADVICE,
        impact=impact,
    )
