"""Data skew by groups: do a stage's tasks fall into a light group and a heavy group?

**What it measures.** Dr. Elephant's two-group method. For each stage, per-task values are
reconstructed from the task distribution (the quantile curve read once per task), sorted,
and split into two groups around the mean; the split point is then moved to the midpoint of the
two group means and the split repeated (two refinements, as Dr. Elephant does). The finding is
the ratio of the heavier group's mean to the lighter group's mean. It is computed for input
bytes, shuffle read bytes and task run time.

**Why it matters.** A max/median ratio only sees the single worst task. A whole group of tasks
that read several times more data than the rest means partitioning is uneven: those tasks set the
stage's duration and the rest of the cluster waits.

**Few tasks.** Stages with few tasks are judged leniently: the severity cannot exceed what the
task count allows. Every stage is judged however small its data; the finding's cost (the heavy
group's extra task time) caps its severity.

**How to fix.** For skewed shuffle reads the finding says why adaptive query execution did not
split the heavy partitions and which settings would (see Stage skew); for an aggregation or RDD
code no setting is the fix: salt the hot keys or repartition on a better-distributed key. For
skewed input, rewrite it in evenly sized files.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import accumulate

from heuristics.appdata import AppData, StageSummary
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Setting, Severity, make_result, no_data
from heuristics.stats import (
    TaskCurve,
    approximate_task_values,
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    quantile_value,
    round2,
    safe_ratio,
)
from heuristics.thresholds import Thresholds
from heuristics.tuning import ordered_refs, skew_settings

NAME = "data_skew_groups"
TITLE = "Data skew (two groups)"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 4  # 2: clearer NONE titles (issue 12); 3: metric in words; 4: no size gates (issue 19)
INPUTS = frozenset({"jobs", "spark_properties", "spark_version", "stages"})

ADVICE = "A group of tasks handles several times more than the rest. "
ADVICE_INPUT = (
    "The heavy tasks read more input: even out the input file sizes, or repartition after "
    "reading (no setting splits unsplittable files)."
)
ADVICE_TIME = (
    "The heavy tasks take longer without reading more data: look for expensive rows on "
    "specific keys or slow hosts."
)

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE

METRICS = ("input_bytes", "shuffle_read_bytes", "executor_run_time_ms")
#: How a title names each metric (the details table keeps the keys, labelled by the web layer).
METRIC_WORDS = {
    "input_bytes": "input",
    "shuffle_read_bytes": "shuffle read",
    "executor_run_time_ms": "task run time",
}


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


#: Up to this many tasks a stage's values are built and split as a list; above it, the split is
#: computed on the quantile curve (the same values, without building them).
SAMPLE_UP_TO = 512


def two_groups(values: list[float], refinements: int = 2) -> tuple[list[float], list[float]]:
    """Split values into (below, at-or-above) a mean-based split point, refined twice."""
    ordered = sorted(values)
    sums = list(accumulate(ordered, initial=0.0))
    cut = _cut(len(ordered), lambda c: sums[c], lambda m: bisect_left(ordered, m), refinements)
    return ordered[:cut], ordered[cut:]


def _cut(
    n: int,
    prefix_sum: Callable[[int], float],
    count_below: Callable[[float], int],
    refinements: int = 2,
) -> int:
    """How many of ``n`` sorted values form the light group: split at the mean, then at the
    midpoint of the two group means, ``refinements`` times (Dr. Elephant moves the split by the
    group means; the midpoint is the 2-means update)."""
    total = prefix_sum(n)
    cut = count_below(total / n)
    for _ in range(refinements):
        if cut in (0, n):
            break
        below = prefix_sum(cut)
        cut = count_below((below / cut + (total - below) / (n - cut)) / 2)
    return cut


def _groups(
    stage: StageSummary, metric: str, params: Params
) -> tuple[float, float, int, int] | None:
    """(light mean, heavy mean, light tasks, heavy tasks) of one metric of a stage, its tasks
    reconstructed from the quantile curve; None when the metric is missing, flat or a group is
    too small."""
    dist = stage.distribution
    assert dist is not None
    curve = dist.metrics.get(metric)
    n = stage.num_tasks
    if not curve or len(curve) != len(dist.quantiles) or n < 2:
        return None
    # Every task at 0 (a stage that read no input, or no shuffle): no groups. any() stops at the
    # first task that is not, where max() and min() read the whole curve; half the curves are 0.
    if not any(curve):
        return None
    top, bottom = max(curve), min(curve)
    # The heavy group's mean is at most the largest task's value and the light group's at least
    # the smallest: a curve whose max/min stays under the low ratio cannot form two groups apart.
    if top <= 0 or top == bottom or (bottom > 0 and top / bottom < params.group_mean_ratio.low):
        return None
    if n <= SAMPLE_UP_TO:
        values = approximate_task_values(dist, metric, n)
        sums = list(accumulate(values, initial=0.0))
        prefix_sum: Callable[[int], float] = sums.__getitem__
        count_below: Callable[[float], int] = partial(bisect_left, values)
    else:
        tasks = TaskCurve(dist, metric, n)
        prefix_sum, count_below = tasks.prefix_sum, tasks.count_below
    cut = _cut(n, prefix_sum, count_below)
    if cut < max(1, params.min_group_size) or n - cut < max(1, params.min_group_size):
        return None
    below = prefix_sum(cut)
    return below / cut, (prefix_sum(n) - below) / (n - cut), cut, n - cut


def _extra_time_ms(time: tuple[float, float, int, int] | None) -> tuple[float, float]:
    """(wall, core) ms the heavy time group costs over the light one: the heavy group's mean
    excess, once for the stage's wall time and per heavy task for core time."""
    if time is None:
        return 0.0, 0.0
    low_mean, high_mean, _, n_high = time
    excess = max(0.0, high_mean - low_mean)
    return excess, excess * n_high


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages whose tasks split into a light and a much heavier group."""
    stages = [s for s in app.stages if s.distribution is not None and s.status != "SKIPPED"]
    if not stages:
        return no_data("No task distributions available")
    worst: tuple[tuple[int, float], tuple[float, float, int, int], StageSummary, str] | None = None
    severity_all = NONE
    rows: list[tuple[object, ...]] = []
    flagged: dict[tuple[int, int], tuple[tuple[int, float], StageSummary]] = {}
    wall_ms = 0.0
    core_ms = 0.0
    for stage in stages:
        if stage.num_tasks < 2:
            continue  # one task forms no groups (_groups gives None for every metric)
        count_cap = params.num_tasks.severity_of(stage.num_tasks)
        stage_severity = NONE
        time_groups = None
        for metric in METRICS:
            groups = _groups(stage, metric, params)
            if metric == "executor_run_time_ms":
                time_groups = groups
            if groups is None:
                continue
            low_mean, high_mean, n_low, n_high = groups
            ratio = safe_ratio(high_mean, low_mean)
            severity = min(params.group_mean_ratio.severity_of(ratio), count_cap)
            key = (int(severity), ratio)
            if worst is None or key > worst[0]:
                worst = (key, groups, stage, metric)
            severity_all = max(severity_all, severity)
            if severity == NONE:
                continue
            stage_severity = max(stage_severity, severity)
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
        if stage_severity > NONE:
            stage_wall, stage_core = _extra_time_ms(time_groups)
            wall_ms += stage_wall
            core_ms += stage_core
            flagged[(stage.stage_id, stage.attempt_id)] = ((int(stage_severity), stage_wall), stage)
    if worst is None:
        return no_data("No stage whose tasks differ enough to form two groups")
    title = _title(worst[0][1], worst[1], worst[2], worst[3])
    if severity_all == NONE:
        # Below every threshold (or too few tasks to matter): say so before the measurement.
        return make_result(
            severity=NONE,
            value=worst[0][1],
            title=f"No group skew of concern; largest: {title[0].lower()}{title[1:]}",
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
        wall_seconds=wall_ms / 1000,
        core_hours=core_ms / 3_600_000,
        formula=(
            "from task run time of the flagged stages: wall = Σ (heavy − light group mean); "
            "core-hours = Σ heavy group tasks × (heavy − light mean), the extra work an even "
            "split would avoid"
        ),
    )
    conf, advice = _fix(app, worst[2], worst[3])
    return make_result(
        severity=severity_all,
        value=worst[0][1],
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=conf,
        stages=ordered_refs(flagged.values()),
    )


def _title(
    ratio: float, groups: tuple[float, float, int, int], stage: StageSummary, metric: str
) -> str:
    """The finding of the worst stage and metric in words (written once, for the worst)."""
    low_mean, high_mean, _, n_high = groups
    fmt = fmt_ms if metric.endswith("_ms") else fmt_bytes
    return (
        f"Stage {stage.stage_id} {METRIC_WORDS[metric]}: heavy group mean "
        f"{fmt_ratio(ratio)} light ({fmt(high_mean)} vs {fmt(low_mean)}, "
        f"{n_high} of {stage.num_tasks} tasks)"
    )


def _fix(app: AppData, stage: StageSummary, metric: str) -> tuple[tuple[Setting, ...], str]:
    """Settings and advice for the worst stage, by the metric that is skewed."""
    if metric == "input_bytes":
        return (), ADVICE + ADVICE_INPUT
    if metric == "executor_run_time_ms":
        return (), ADVICE + ADVICE_TIME
    dist = stage.distribution
    assert dist is not None
    largest = quantile_value(dist, metric, 1.0) or 0.0
    median = quantile_value(dist, metric, 0.5) or 0.0
    conf, why = skew_settings(app, largest, median)
    return conf, ADVICE + why
