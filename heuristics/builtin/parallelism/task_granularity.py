"""Task granularity: stages with many tiny tasks, or with a few very long ones.

**What it measures.** Two patterns, per stage, from the task distribution's median task time:

- **tiny tasks**: a stage with many tasks (at least a minimum count) whose median task is very
  short. Each task costs scheduling, serialization and result handling on the driver, so
  thousands of millisecond-long tasks spend more time on overhead than on work.
- **few long tasks**: a stage with no more tasks than the application has task slots (cores),
  whose median task is very long. The stage runs in a single wave: spare slots stay idle, the
  work cannot be spread when more cores are added, and a single failed task costs a long retry.

For each flagged stage the details suggest a partition count: the stage's total task time
divided by a target task time, and never fewer than twice the task slots for long tasks.

**How to fix.** Tiny tasks: fewer partitions (`coalesce`, a lower `spark.sql.shuffle.partitions`,
or AQE partition coalescing `spark.sql.adaptive.coalescePartitions.enabled=true`), or combine
small input files (`spark.sql.files.maxPartitionBytes`). Few long tasks: `repartition(n)` to the
suggested count, raise `spark.sql.shuffle.partitions`, or split large unsplittable input files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData, StageSummary
from heuristics.params import param
from heuristics.result import (
    DESCENDING,
    Details,
    Impact,
    Outcome,
    Severity,
    Thresholds,
    make_result,
    no_data,
)
from heuristics.stats import fmt_count, fmt_ms, quantile_value, stage_duration_ms, total_task_cores

NAME = "task_granularity"
TITLE = "Task granularity"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: clearer NONE titles (issue 12); 3: "1 stage", "1 task slot" in titles
INPUTS = frozenset({"executors", "stages"})

ADVICE_TINY = (
    "Stages run many tiny tasks whose overhead outweighs their work. Use fewer partitions "
    "(coalesce, lower spark.sql.shuffle.partitions, enable AQE partition coalescing) or "
    "combine small input files."
)
ADVICE_LONG = (
    "Stages run no more tasks than there are cores, and each runs long. Repartition to the "
    "suggested count or raise spark.sql.shuffle.partitions so all cores work."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the task granularity heuristic."""

    tiny_median_task_ms: Thresholds = param(
        Thresholds(500, 250, 100, 50, DESCENDING),
        "median task time of stages with many tasks (ms; descending)",
    )
    min_tasks_for_tiny: int = param(
        1000,
        "gate: a stage needs at least this many tasks to be judged for tiny tasks (count)",
    )
    long_median_task_ms: Thresholds = param(
        Thresholds(5 * 60 * 1000, 15 * 60 * 1000, 30 * 60 * 1000, 60 * 60 * 1000),
        "median task time of stages with no more tasks than task slots (ms; ascending; 5/15/30/60 min)",
    )
    target_task_ms: int = param(
        60 * 1000,
        "task time that a suggested partition count aims at (ms; 60 s)",
    )
    assumed_task_overhead_ms: int = param(
        10,
        "per-task scheduling overhead when the distribution has no scheduler delay (ms)",
    )


def _median_ms(stage: StageSummary) -> float | None:
    dist = stage.distribution
    if dist is None:
        return None
    for key in ("executor_run_time_ms", "duration_ms"):
        value = quantile_value(dist, key, 0.5)
        if value is not None:
            return value
    return None


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages whose tasks are much too small or too few and long."""
    stages = [s for s in app.stages if s.distribution is not None and s.status != "SKIPPED"]
    if not stages:
        return no_data("No task distributions available")
    slots = total_task_cores(app)
    severity_all = Severity.NONE
    worst: tuple[Severity, float, str, str] | None = None
    rows = []
    wall_ms = 0.0
    core_ms = 0.0
    judged = 0
    for stage in stages:
        if stage.num_tasks <= 0 or slots < stage.num_tasks < params.min_tasks_for_tiny:
            continue  # neither many tasks nor fewer than the slots: nothing to judge
        med = _median_ms(stage)
        if med is None:
            continue
        total_run_ms = stage.executor_run_time_ms or med * stage.num_tasks
        by_time = math.ceil(total_run_ms / max(1, params.target_task_ms))
        if stage.num_tasks >= params.min_tasks_for_tiny:
            judged += 1
            kind = "tiny tasks"
            severity = params.tiny_median_task_ms.severity_of(med)
            suggested = max(1, min(stage.num_tasks, max(slots, by_time)))
            delay = (
                quantile_value(stage.distribution, "scheduler_delay_ms", 0.5)
                if stage.distribution is not None
                else None
            )
            per_task = delay if delay is not None else params.assumed_task_overhead_ms
            extra_core_ms = max(0, stage.num_tasks - suggested) * per_task
            stage_wall = extra_core_ms / slots
        elif stage.num_tasks <= slots:
            judged += 1
            kind = "few long tasks"
            severity = params.long_median_task_ms.severity_of(med)
            suggested = max(2 * slots, by_time)
            duration = stage_duration_ms(stage) or med
            extra_core_ms = (slots - stage.num_tasks) * duration
            stage_wall = max(0.0, duration - total_run_ms / slots)
        else:
            continue
        value = med
        title = (
            f"Stage {stage.stage_id}: {stage.num_tasks} tasks with median {fmt_ms(med)} "
            f"({kind}, {fmt_count(slots, 'task slot')}); suggest {suggested} partitions"
        )
        if worst is None or severity > worst[0]:
            worst = (severity, value, title, kind)
        severity_all = max(severity_all, severity)
        if severity == Severity.NONE:
            continue
        rows.append((stage.stage_id, kind, stage.num_tasks, round(med), suggested, int(severity)))
        wall_ms += stage_wall
        core_ms += extra_core_ms
    if worst is None or judged == 0:
        return no_data(
            f"No stage with ≥ {params.min_tasks_for_tiny} tasks or at most as many tasks as "
            f"{fmt_count(slots, 'task slot')}",
        )
    title = worst[2]
    if severity_all == Severity.NONE:
        # Within every threshold: say so rather than print a suggestion that reads like a problem.
        title = (
            f"Task sizes within limits in the {fmt_count(judged, 'stage')} judged "
            f"({fmt_count(slots, 'task slot')})"
        )
    kinds = {r[1] for r in rows}
    advice = " ".join(
        a for k, a in (("tiny tasks", ADVICE_TINY), ("few long tasks", ADVICE_LONG)) if k in kinds
    )
    details = Details(
        ("stage", "problem", "tasks", "median_task_ms", "suggested_partitions", "severity"),
        tuple(rows),
    )
    impact = Impact(
        wall_seconds=wall_ms / 1000,
        core_hours=core_ms / 3_600_000,
        formula=(
            "tiny: (tasks − suggested) × per-task overhead (median scheduler delay or assumed) "
            "core-time, ÷ slots for wall; few long: idle slots × stage duration core-time, "
            "wall = stage duration − task time ÷ slots"
        ),
    )
    return make_result(
        severity=severity_all,
        value=worst[1],
        title=title,
        details=details,
        advice=advice,
        impact=impact,
    )
