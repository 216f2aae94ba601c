"""Data skew by groups: do a stage's tasks fall into a light group and a heavy group?

**What it measures.** Dr. Elephant's two-group method. For each stage, per-task values are
reconstructed from the task distribution (the quantile curve is sampled once per task), sorted,
and split into two groups around the mean; the split point is then moved to the midpoint of the
two group means and the split repeated (two refinements, as Dr. Elephant does). The finding is
the ratio of the heavier group's mean to the lighter group's mean. It is computed for input
bytes, shuffle read bytes and task run time.

**Why it matters.** A max/median ratio only sees the single worst task. A whole group of tasks
that read several times more data than the rest means partitioning is uneven: those tasks set the
stage's duration and the rest of the cluster waits.

**Gates.** Stages with few tasks are judged leniently (the severity cannot exceed what the task
count allows), and a stage is skipped when the heavy group's mean is too small to matter.

**How to fix.** Repartition on a better-distributed key, salt hot keys, enable AQE skew-join
handling (`spark.sql.adaptive.skewJoin.enabled=true`), or rewrite input in evenly sized files.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, Thresholds, make_result, no_data
from heuristics.stats import (
    approximate_task_values,
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    round2,
    safe_ratio,
)

NAME = "data_skew_groups"
TITLE = "Data skew (two groups)"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: clearer NONE titles (issue 12); 3: titles name the metric in words
INPUTS = frozenset({"stages"})

ADVICE = (
    "A group of tasks handles several times more than the rest. Repartition on a better key, "
    "salt hot keys, enable spark.sql.adaptive.skewJoin.enabled, or even out input file sizes."
)

METRICS = ("input_bytes", "shuffle_read_bytes", "executor_run_time_ms")
#: How a title names each metric (the details table keeps the keys, labelled by the web layer).
METRIC_WORDS = {
    "input_bytes": "input",
    "shuffle_read_bytes": "shuffle read",
    "executor_run_time_ms": "task run time",
}
# Sampling the quantile curve more finely than this adds no information (21 points) but costs time.
MAX_POINTS = 1000


@dataclass(frozen=True)
class Params:
    """Parameters of the two-group data skew heuristic."""

    group_mean_ratio: Thresholds = param(
        Thresholds(2.0, 4.0, 8.0, 16.0),
        "heavy group mean / light group mean, per stage and metric (ratio; ascending)",
    )
    num_tasks: Thresholds = param(
        Thresholds(10, 50, 100, 200),
        "tasks in the stage: caps the severity, so few tasks cannot be badly skewed (count; ascending)",
    )
    min_group_size: int = param(
        1,
        "gate: each of the two groups must hold at least this many tasks (count)",
    )
    min_heavy_group_mean_bytes: int = param(
        64 * 1024 * 1024,
        "gate: skip byte metrics whose heavy group mean is below this (bytes; 64 MiB)",
    )
    min_heavy_group_mean_ms: int = param(
        60 * 1000,
        "gate: skip task time whose heavy group mean is below this (ms; 60 s)",
    )


def two_groups(values: list[float], refinements: int = 2) -> tuple[list[float], list[float]]:
    """Split values into (below, at-or-above) a mean-based split point, refined twice."""
    ordered = sorted(values)
    middle = sum(ordered) / len(ordered)
    low, high = _split(ordered, middle)
    for _ in range(refinements):
        if not low or not high:
            break
        # Dr. Elephant moves the split by the group means; the midpoint is the 2-means update.
        middle = (sum(low) / len(low) + sum(high) / len(high)) / 2
        low, high = _split(ordered, middle)
    return low, high


def _split(ordered: list[float], middle: float) -> tuple[list[float], list[float]]:
    return [v for v in ordered if v < middle], [v for v in ordered if v >= middle]


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages whose tasks split into a light and a much heavier group."""
    stages = [s for s in app.stages if s.distribution is not None and s.status != "SKIPPED"]
    if not stages:
        return no_data("No task distributions available")
    worst: tuple[float, str] | None = None
    severity_all = Severity.NONE
    rows: list[tuple[object, ...]] = []
    wall_ms = 0.0
    core_ms = 0.0
    for stage in stages:
        dist = stage.distribution
        assert dist is not None
        count_cap = params.num_tasks.severity_of(stage.num_tasks)
        for metric in METRICS:
            is_time = metric.endswith("_ms")
            gate = params.min_heavy_group_mean_ms if is_time else params.min_heavy_group_mean_bytes
            top = dist.metrics.get(metric)
            if not top or max(top) < gate:
                continue  # the heavy group's mean cannot exceed the largest task: skip early
            values = approximate_task_values(dist, metric, min(stage.num_tasks, MAX_POINTS))
            if len(values) < 2:
                continue
            low, high = two_groups(values)
            scale = stage.num_tasks / len(values)
            n_low, n_high = round(len(low) * scale), round(len(high) * scale)
            if n_low < max(1, params.min_group_size) or n_high < params.min_group_size:
                continue
            low_mean = sum(low) / len(low)
            high_mean = sum(high) / len(high)
            if high_mean < gate:
                continue
            ratio = safe_ratio(high_mean, low_mean)
            severity = min(params.group_mean_ratio.severity_of(ratio), count_cap)
            fmt = fmt_ms if is_time else fmt_bytes
            if worst is None or ratio > worst[0]:
                worst = (
                    ratio,
                    f"Stage {stage.stage_id} {METRIC_WORDS[metric]}: heavy group mean {fmt_ratio(ratio)} light "
                    f"({fmt(high_mean)} vs {fmt(low_mean)}, {n_high} of {stage.num_tasks} tasks)",
                )
            severity_all = max(severity_all, severity)
            if severity == Severity.NONE:
                continue
            rows.append(
                (
                    stage.stage_id,
                    metric,
                    stage.num_tasks,
                    n_low,
                    n_high,
                    round2(low_mean),
                    round2(high_mean),
                    round2(ratio),
                    int(severity),
                )
            )
            if is_time:
                wall_ms += high_mean - low_mean
                core_ms += (high_mean - low_mean) * n_high
    if worst is None:
        return no_data(
            "No stage large enough to judge group skew (heavy group below "
            f"{fmt_bytes(params.min_heavy_group_mean_bytes)} / "
            f"{fmt_ms(params.min_heavy_group_mean_ms)})",
        )
    details = Details(
        (
            "stage",
            "metric",
            "tasks",
            "light_group_tasks",
            "heavy_group_tasks",
            "light_group_mean",
            "heavy_group_mean",
            "ratio",
            "severity",
        ),
        tuple(rows),
    )
    impact = Impact(
        wall_seconds=wall_ms / 1000 if wall_ms else None,
        core_hours=core_ms / 3_600_000 if core_ms else None,
        formula=(
            "from task run time only: wall = Σ (heavy − light group mean); core-hours = Σ heavy "
            "group tasks × (heavy − light mean), the extra work an even split would avoid"
        ),
    )
    title = worst[1]
    if severity_all == Severity.NONE:
        # Below every threshold (or too few tasks to matter): say so before the measurement.
        title = f"No group skew of concern; largest: {title[0].lower()}{title[1:]}"
    return make_result(
        severity=severity_all,
        value=worst[0],
        title=title,
        details=details,
        advice=ADVICE,
        impact=impact,
    )
