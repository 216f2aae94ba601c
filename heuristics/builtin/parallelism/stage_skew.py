"""Stage skew: the slowest task of a stage against its median task.

**What it measures.** For every stage long enough to matter, the ratio between the longest
task's executor run time and the median task's run time, read from the stage's task
distribution (the History Server's task summary).

**Why it matters.** A stage ends only when its last task ends. When one task runs many times
longer than the median, all other task slots sit idle while that straggler finishes: the stage
takes as long as the worst task, and the cores reserved for the application are wasted.

**Cause.** When the slowest tasks also read many times more input or shuffle bytes than the
median task, the data is skewed (a few keys or files hold most of the rows). When bytes are
even but time is not, the skew is in the computation (expensive rows, a slow host, GC).

**How to fix.**
- Data skew: enable adaptive query execution skew-join handling
  (`spark.sql.adaptive.enabled=true`, `spark.sql.adaptive.skewJoin.enabled=true`), salt hot
  keys before a join or aggregation, or broadcast the smaller side of a join.
- Unsplittable or oversized input files: repartition after reading, or rewrite the input in
  evenly sized files.
- Compute skew: look for expensive per-row work on specific keys, and check whether the slow
  tasks ran on one host (speculation, `spark.speculation=true`, can hide a bad node).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, Thresholds, make_result, no_data
from heuristics.stats import (
    fmt_ms,
    fmt_ratio,
    quantile_value,
    round2,
    safe_ratio,
    stage_duration_ms,
    total_task_cores,
)

NAME = "stage_skew"
TITLE = "Stage skew"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = frozenset({"executors", "stages"})

ADVICE = (
    "Stragglers keep the other task slots idle. For data skew enable AQE skew-join handling "
    "(spark.sql.adaptive.skewJoin.enabled), salt hot keys or broadcast the small side of the "
    "join; for compute skew look for expensive rows or a slow host."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the stage skew heuristic."""

    task_time_ratio: Thresholds = param(
        Thresholds(2.0, 4.0, 8.0, 16.0),
        "max task run time / median task run time of a stage (ratio; ascending)",
    )
    min_stage_duration_ms: int = param(
        5 * 60 * 1000,
        "gate: stages shorter than this wall time are not judged (ms; 5 min)",
    )
    min_max_task_ms: int = param(
        60 * 1000,
        "gate: stages whose longest task is shorter than this are not judged (ms; 60 s)",
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
    worst_ratio: float | None = None
    worst_title = ""
    worst_severity = Severity.NONE
    rows: list[tuple[object, ...]] = []
    wall_ms = 0.0
    core_ms = 0.0
    for stage in with_dist:
        dist = stage.distribution
        assert dist is not None
        duration = stage_duration_ms(stage)
        if duration is None or duration < params.min_stage_duration_ms:
            continue
        key = "executor_run_time_ms" if "executor_run_time_ms" in dist.metrics else "duration_ms"
        med = quantile_value(dist, key, 0.5)
        top = quantile_value(dist, key, 1.0)
        if med is None or top is None or top < params.min_max_task_ms:
            continue
        judged += 1
        ratio = safe_ratio(top, med)
        severity = params.task_time_ratio.severity_of(ratio)
        if worst_ratio is None or ratio > worst_ratio:
            worst_ratio = ratio
            worst_title = (
                f"Stage {stage.stage_id} max task {fmt_ratio(ratio)} median "
                f"({fmt_ms(top)} vs {fmt_ms(med)})"
            )
        worst_severity = max(worst_severity, severity)
        if severity == Severity.NONE:
            continue
        byte_ratios = []
        for byte_key in ("input_bytes", "shuffle_read_bytes"):
            b_med = quantile_value(dist, byte_key, 0.5)
            b_max = quantile_value(dist, byte_key, 1.0)
            byte_ratios.append(
                None if b_med is None or b_max is None or b_max <= 0 else safe_ratio(b_max, b_med)
            )
        is_data = any(r is not None and r >= params.data_skew_bytes_ratio for r in byte_ratios)
        rows.append(
            (
                stage.stage_id,
                stage.num_tasks,
                round(med),
                round(top),
                round2(ratio),
                None if byte_ratios[0] is None else round2(byte_ratios[0]),
                None if byte_ratios[1] is None else round2(byte_ratios[1]),
                "data skew" if is_data else "compute skew",
                int(severity),
            )
        )
        straggler_ms = top - med
        wall_ms += straggler_ms
        core_ms += straggler_ms * max(0, min(slots, stage.num_tasks) - 1)
    if judged == 0:
        return no_data(
            f"No stage long enough to judge skew (needs ≥ {fmt_ms(params.min_stage_duration_ms)} "
            f"and a task ≥ {fmt_ms(params.min_max_task_ms)})",
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
    return make_result(
        severity=worst_severity,
        value=worst_ratio,
        title=worst_title,
        details=details,
        advice=ADVICE,
        impact=impact,
    )
