"""Executor load imbalance: did some executors do far more work than the others?

**What it measures.** Across the executors that ran tasks, the ratio between the busiest
executor and the median executor for task time, input bytes and shuffle read bytes. It needs at
least two executors. The cost is the task time the other executors could have taken over from
the busiest one (its excess over each of theirs), which caps the severity.

**Why it matters.** When one executor does several times the median's work, the others finish
early and idle. Common causes: data locality pulling tasks to the hosts that store the input,
skewed partitions landing on one executor, executors added late by dynamic allocation, or a
few slow hosts.

**How to fix.** Check the stage skew findings first. For locality-driven imbalance lower
`spark.locality.wait` (e.g. `1s` or `0s`); for late executors review dynamic allocation
(`spark.dynamicAllocation.initialExecutors`, `minExecutors`); for slow hosts consider
`spark.speculation=true` or excluding bad nodes (`spark.excludeOnFailure.enabled`).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.stats import fmt_bytes, fmt_ms, fmt_ratio, median, round2, safe_ratio
from heuristics.thresholds import Thresholds

NAME = "executor_load_imbalance"
TITLE = "Executor load imbalance"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 4  # 2: local-mode wording (issue 12); 3: metric in words; 4: no size gates (issue 19)
INPUTS = frozenset({"executors"})

#: How a title names each measure (the details table keeps the keys, labelled by the web layer).
METRIC_WORDS = {
    "task_time_ms": "task time",
    "input_bytes": "input",
    "shuffle_read_bytes": "shuffle read",
}

ADVICE = (
    "Work is unevenly spread over executors. Check stage skew first; lower spark.locality.wait "
    "for locality-driven imbalance, and review dynamic allocation and slow hosts."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the executor load imbalance heuristic."""

    max_to_median_ratio: Thresholds = param(
        Thresholds(1.5, 2.0, 4.0, 8.0),
        "busiest executor / median executor for task time, input and shuffle read (ratio; ascending)",
    )
    min_executors: int = param(
        2,
        "fewer executors than this are not compared (count; at least 2)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Compare the busiest executor with the median executor."""
    execs = [e for e in app.executors if not e.is_driver]
    need = max(2, params.min_executors)
    if len(execs) < need:
        # Local mode: the driver is the only JVM running tasks (counted as 1 executor elsewhere).
        ran = "only the driver ran tasks" if not execs else f"only {len(execs)} executor ran tasks"
        if len(execs) > 1:
            ran = f"only {len(execs)} executors ran tasks"
        return no_data(f"Nothing to compare: {ran}; at least {need} needed")
    metrics = (
        ("task_time_ms", lambda e: e.total_duration_ms, fmt_ms),
        ("input_bytes", lambda e: e.total_input_bytes, fmt_bytes),
        ("shuffle_read_bytes", lambda e: e.total_shuffle_read_bytes, fmt_bytes),
    )
    severity_all = Severity.NONE
    worst: tuple[float, str] | None = None
    rows = []
    for metric, getter, fmt in metrics:
        values = [float(getter(e)) for e in execs]
        top = max(values)
        if top <= 0:
            continue
        med = median(values)
        ratio = safe_ratio(top, med)
        severity = params.max_to_median_ratio.severity_of(ratio)
        busiest = execs[values.index(top)]
        if worst is None or ratio > worst[0]:
            worst = (
                ratio,
                f"Executor {busiest.executor_id} {METRIC_WORDS[metric]} {fmt_ratio(ratio)} median "
                f"({fmt(top)} vs {fmt(med)}, {len(execs)} executors)",
            )
        severity_all = max(severity_all, severity)
        rows.append(
            (
                metric,
                len(execs),
                round2(med),
                round2(top),
                round2(ratio),
                busiest.executor_id,
                int(severity),
            )
        )
    if worst is None:
        return no_data("Executors ran no tasks to compare")
    if severity_all == Severity.NONE:
        return make_result(
            severity=Severity.NONE,
            value=worst[0],
            title=f"Work evenly spread; largest: {worst[1][0].lower()}{worst[1][1:]}",
        )
    # Task time already counts core-time, so the gap to the busiest is idle core-time; an
    # imbalance in bytes alone costs whatever task time it caused.
    times = [float(e.total_duration_ms) for e in execs]
    top_time = max(times)
    busiest = execs[times.index(top_time)]
    impact = Impact(
        wall_seconds=(top_time - median(times)) / 1000 / max(1, busiest.total_cores),
        core_hours=sum(top_time - t for t in times) / 3_600_000,
        formula=(
            "wall = (busiest − median executor task time) ÷ busiest executor's cores; "
            "core-hours = Σ executors (busiest − own task time), capacity left waiting"
        ),
    )
    details = Details(
        ("metric", "executors", "median", "max", "ratio", "busiest_executor", "severity"),
        tuple(rows),
    )
    return make_result(
        severity=severity_all,
        value=worst[0],
        title=worst[1],
        details=details,
        advice=ADVICE,
        impact=impact,
    )
