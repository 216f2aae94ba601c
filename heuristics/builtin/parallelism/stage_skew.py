"""Stage skew: the slowest task of a stage against its median task.

**What it measures.** For every stage, the ratio between the longest task's executor run time and
the median task's run time, read from the stage's task distribution (the History Server's task
summary). Every stage is judged, however short: the finding's cost (the straggler's excess over
the median, and the task slots idle meanwhile) caps its severity, so a 35 s straggler in a 44 s
application is a LOW note and the same pattern costing an hour is CRITICAL.

**Why it matters.** A stage ends only when its last task ends. When one task runs many times
longer than the median, all other task slots sit idle while that straggler finishes: the stage
takes as long as the worst task, and the cores reserved for the application are wasted.

**Cause.** When the slowest tasks also read many times more input or shuffle bytes than the
median task, the data is skewed (a few keys or files hold most of the rows). When bytes are
even but time is not, the skew is in the computation (expensive rows, a slow host, GC).

**How to fix.**
- Shuffle data skew in a DataFrame/SQL join: the finding says why adaptive query execution (AQE)
  did not split the skewed partition and which settings would let it: AQE off, skew-join
  handling off (on by default since Spark 3.0, AQE itself since 3.2), the partition below
  `spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes` (256 MiB by default) or not above
  `skewedPartitionFactor` (5) times the median, or smaller than two pieces of
  `spark.sql.adaptive.advisoryPartitionSizeInBytes` (64 MiB), the size AQE cuts it into.
- AQE splits skewed partitions of sort-merge joins only: for an aggregation or RDD code no
  setting is the fix. Salt the hot key (append a random suffix and aggregate twice), or
  repartition on a better-distributed key.
- Input skew (uneven or unsplittable files): repartition after reading, or rewrite the input in
  evenly sized, splittable files.
- Compute skew: look for expensive per-row work on specific keys, and check whether the slow
  tasks ran on one host (`spark.speculation=true` can hide a bad node).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, StageSummary
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.stats import (
    fmt_ms,
    fmt_ratio,
    quantile_value,
    round2,
    safe_ratio,
    total_task_cores,
)
from heuristics.thresholds import Thresholds
from heuristics.tuning import ordered_refs, skew_settings

NAME = "stage_skew"
TITLE = "Stage skew"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: no size gates (severity capped by cost), AQE settings, stages (issue 19)
INPUTS = frozenset({"executors", "jobs", "spark_properties", "spark_version", "stages"})

ADVICE_COMPUTE = (
    "The straggler read about as much data as the other tasks: the skew is in the computation. "
    "Look for expensive rows on specific keys or a slow host (spark.speculation=true re-runs "
    "slow tasks elsewhere)."
)
ADVICE_INPUT = (
    "The straggler read much more input than the median task: input files are uneven or "
    "unsplittable (gzip). No setting splits them: repartition after reading, or rewrite the "
    "input in evenly sized, splittable files."
)

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE


@dataclass(frozen=True)
class Params:
    """Parameters of the stage skew heuristic."""

    task_time_ratio: Thresholds = param(
        Thresholds(2.0, 4.0, 8.0, 16.0),
        "max task run time / median task run time of a stage (ratio; ascending)",
    )
    data_skew_bytes_ratio: float = param(
        2.0,
        'input or shuffle-read bytes max/median at or above this marks "data skew", else "compute skew" (ratio)',
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages whose longest task runs far longer than the median task."""
    with_dist = [s for s in app.stages if s.distribution is not None and s.status != "SKIPPED"]
    if not with_dist:
        return no_data("No task distributions available")
    slots = total_task_cores(app)
    judged = 0
    worst: tuple[Severity, float, float, tuple[float, float], StageSummary] | None = None
    worst_severity = NONE
    rows: list[tuple[object, ...]] = []
    flagged: list[tuple[tuple[int, float], StageSummary, str, float, float]] = []
    wall_ms = 0.0
    core_ms = 0.0
    for stage in with_dist:
        dist = stage.distribution
        assert dist is not None
        key = "executor_run_time_ms" if "executor_run_time_ms" in dist.metrics else "duration_ms"
        med = quantile_value(dist, key, 0.5)
        top = quantile_value(dist, key, 1.0)
        if med is None or top is None or top <= 0:
            continue
        judged += 1
        ratio = safe_ratio(top, med)
        severity = params.task_time_ratio.severity_of(ratio)
        straggler_ms = top - med
        if worst is None or (severity, straggler_ms, ratio) > worst[:3]:
            worst = (severity, straggler_ms, ratio, (top, med), stage)  # its title written last
        worst_severity = max(worst_severity, severity)
        if severity == NONE:
            continue
        byte_ratios: list[float | None] = []
        for byte_key in ("input_bytes", "shuffle_read_bytes"):
            b_med = quantile_value(dist, byte_key, 0.5)
            b_max = quantile_value(dist, byte_key, 1.0)
            byte_ratios.append(
                None if b_med is None or b_max is None or b_max <= 0 else safe_ratio(b_max, b_med)
            )
        skewed = [r is not None and r >= params.data_skew_bytes_ratio for r in byte_ratios]
        cause = "shuffle data skew" if skewed[1] else "input skew" if skewed[0] else "compute skew"
        rows.append(
            (
                stage.stage_id,
                stage.num_tasks,
                round(med),
                round(top),
                round2(ratio),
                None if byte_ratios[0] is None else round2(byte_ratios[0]),
                None if byte_ratios[1] is None else round2(byte_ratios[1]),
                "compute skew" if cause == "compute skew" else "data skew",
                int(severity),
            )
        )
        flagged.append(((int(severity), straggler_ms), stage, cause, med, top))
        wall_ms += straggler_ms
        core_ms += straggler_ms * max(0, min(slots, stage.num_tasks) - 1)
    if judged == 0 or worst is None:
        return no_data("No stage with task times to compare")
    top, med = worst[3]
    title = (
        f"Stage {worst[4].stage_id} max task {fmt_ratio(worst[2])} median "
        f"({fmt_ms(top)} vs {fmt_ms(med)})"
    )
    if worst_severity == NONE:
        return make_result(
            severity=NONE,
            value=worst[2],
            title=f"No stage skew; largest: {title[0].lower()}{title[1:]}",
        )
    details = Details(
        (
            "stage",
            "tasks",
            "median_task_ms",
            "max_task_ms",
            "ratio",
            "input_bytes_max_over_median",
            "shuffle_read_bytes_max_over_median",
            "cause",
            "severity",
        ),
        tuple(rows),
    )
    impact = Impact(
        wall_seconds=wall_ms / 1000,
        core_hours=core_ms / 3_600_000,
        formula=(
            "wall = Σ over skewed stages (max − median task run time); core-hours = that × "
            "(task slots − 1) left idle while the straggler runs"
        ),
    )
    conf, advice = _fix(app, max(flagged, key=lambda f: f[0]))
    return make_result(
        severity=worst_severity,
        value=worst[2],
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=conf,
        stages=ordered_refs((f[0], f[1]) for f in flagged),
    )


def _fix(
    app: AppData, worst: tuple[tuple[int, float], StageSummary, str, float, float]
) -> tuple[tuple[tuple[str, str], ...], str]:
    """Settings and advice for the worst skewed stage, by its cause."""
    _, stage, cause, _, _ = worst
    lead = f"Stage {stage.stage_id}'s straggler keeps the other task slots idle. "
    if cause == "compute skew":
        return (), lead + ADVICE_COMPUTE
    if cause == "input skew":
        return (), lead + ADVICE_INPUT
    dist = stage.distribution
    assert dist is not None
    largest = quantile_value(dist, "shuffle_read_bytes", 1.0) or 0.0
    median = quantile_value(dist, "shuffle_read_bytes", 0.5) or 0.0
    conf, why = skew_settings(app, largest, median)
    return conf, lead + why
