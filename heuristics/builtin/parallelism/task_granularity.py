"""Task granularity: stages with many tiny tasks, or whose few tasks fill a single wave.

**What it measures.** Two patterns, per stage:

- **tiny tasks**: a stage with more tasks than Spark's recommended 2–3 per task slot (more than
  ``tiny_min_tasks_per_slot`` × slots) whose median task is very short. Spark's tuning guide
  says it runs tasks "as short as 200 ms" efficiently; below that each task's scheduling,
  serialization and result handling on the driver weigh on its work, and thousands of
  millisecond-long tasks spend more time on overhead than on work.
- **few long tasks**: a stage with no more tasks than the application has task slots (cores),
  so it runs in a single wave, that takes a large share of the application's wall time. Spare
  slots stay idle, the work cannot be spread when more cores are added, and one failed task
  costs a long retry. The share is the stage's wall time over the application's.

For each flagged stage the details suggest a partition count: tiny tasks aim at the larger of
the stage's task time over a target task time, its bytes over Spark's advisory partition size
(`spark.sql.adaptive.advisoryPartitionSizeInBytes`, 64 MiB by default) and the task slots; few
long tasks at least twice the task slots.

**Cost.** Tiny tasks: the tasks a right-sized stage would not run times the per-task overhead
(the median scheduler delay, or an assumed overhead). Few long tasks: the slots left idle during
the stage. The cost caps the severity, so a seconds-long stage is at most a LOW note.

**How to fix.** The finding names the setting that controls the stage's partition count and its
value for the next run: `spark.sql.shuffle.partitions` when the stage's tasks are that setting,
`spark.sql.adaptive.advisoryPartitionSizeInBytes` when AQE coalescing sized them (and
`spark.sql.adaptive.coalescePartitions.enabled=true` when coalescing was switched off),
`spark.sql.files.maxPartitionBytes` for file scans, `spark.default.parallelism` for
`parallelize`/`range` without a count. When the code fixed the count (`repartition(n)`,
`numSlices`), the finding says so: no setting is the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData, StageSummary
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Setting, Severity, make_result, no_data
from heuristics.sparkconf import effective_bool
from heuristics.stats import (
    fmt_count,
    fmt_ms,
    quantile_value,
    safe_ratio,
    stage_duration_ms,
    total_task_cores,
)
from heuristics.thresholds import DESCENDING, Thresholds
from heuristics.tuning import (
    AQE,
    COALESCE,
    advisory_size,
    bytes_partitions,
    merge_conf,
    ordered_refs,
    partition_settings,
    uses_rdd_api,
)

NAME = "task_granularity"
TITLE = "Task granularity"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 4  # 2: NONE titles (issue 12); 3: counts in titles; 4: no size gates, settings (issue 19)
INPUTS = frozenset(
    {"duration_ms", "executors", "jobs", "spark_properties", "spark_version", "stages"}
)

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE

TINY = "tiny tasks"
LONG = "few long tasks"


@dataclass(frozen=True)
class Params:
    """Parameters of the task granularity heuristic."""

    tiny_median_task_ms: Thresholds = param(
        Thresholds(200, 100, 50, 20, DESCENDING),
        "median task time of stages with many tasks (ms; descending)",
    )
    tiny_min_tasks_per_slot: float = param(
        3.0,
        "a stage is judged for tiny tasks when it has more than this many tasks per task slot "
        "(Spark recommends 2-3) (ratio)",
    )
    single_wave_share: Thresholds = param(
        Thresholds(0.25, 0.5, 0.75, 0.9),
        "wall time of a stage with no more tasks than task slots / application wall time "
        "(ratio; ascending)",
    )
    target_task_ms: int = param(
        60 * 1000,
        "task time that a suggested partition count aims at (ms; 60 s)",
        minimum=1,
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


def _stage_bytes(stage: StageSummary) -> int:
    return stage.shuffle_read_bytes or stage.input_bytes


def _tiny(
    target: int, stage: StageSummary, med: float, slots: int, params: Params
) -> tuple[Severity, int, float, float]:
    """(severity, suggested partitions, extra core ms, extra wall ms) of a many-task stage."""
    total_run_ms = stage.executor_run_time_ms or med * stage.num_tasks
    by_time = math.ceil(total_run_ms / max(1, params.target_task_ms))
    by_bytes = bytes_partitions(_stage_bytes(stage), target)
    suggested = max(1, min(stage.num_tasks, max(slots, by_time, by_bytes)))
    delay = (
        quantile_value(stage.distribution, "scheduler_delay_ms", 0.5)
        if stage.distribution is not None
        else None
    )
    per_task = delay if delay is not None else params.assumed_task_overhead_ms
    extra_core_ms = max(0, stage.num_tasks - suggested) * per_task
    return (
        params.tiny_median_task_ms.severity_of(med),
        suggested,
        extra_core_ms,
        extra_core_ms / slots,
    )


def _long(
    app: AppData, target: int, stage: StageSummary, med: float, slots: int, params: Params
) -> tuple[Severity, int, float, float, float]:
    """(severity, suggested partitions, idle core ms, extra wall ms, share) of a single-wave
    stage."""
    total_run_ms = stage.executor_run_time_ms or med * stage.num_tasks
    duration = stage_duration_ms(stage) or med
    share = safe_ratio(duration, app.duration_ms) if app.duration_ms > 0 else 0.0
    by_time = math.ceil(total_run_ms / max(1, params.target_task_ms))
    suggested = max(2 * slots, by_time, bytes_partitions(_stage_bytes(stage), target))
    idle_core_ms = (slots - stage.num_tasks) * duration
    wall = max(0.0, duration - total_run_ms / slots)
    return (
        params.single_wave_share.severity_of(min(share, 1.0)),
        suggested,
        idle_core_ms,
        wall,
        share,
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages whose tasks are much too small, or too few for the task slots."""
    stages = [s for s in app.stages if s.distribution is not None and s.status != "SKIPPED"]
    if not stages:
        return no_data("No task distributions available")
    slots = total_task_cores(app)
    target = advisory_size(app)
    severity_all = NONE
    # The worst stage's key and what its title says (written once, at the end).
    worst: tuple[tuple[int, float], StageSummary, float, str, int, float | None] | None = None
    rows: list[tuple[object, ...]] = []
    flagged: list[tuple[tuple[int, float], StageSummary, str, int]] = []
    wall_ms = 0.0
    core_ms = 0.0
    judged = 0
    for stage in stages:
        med = _median_ms(stage)
        if med is None or stage.num_tasks <= 0:
            continue
        if stage.num_tasks > params.tiny_min_tasks_per_slot * slots:
            kind = TINY
            severity, suggested, extra_core, extra_wall = _tiny(target, stage, med, slots, params)
            share: float | None = None
        elif stage.num_tasks <= slots:
            kind = LONG
            severity, suggested, extra_core, extra_wall, share = _long(
                app, target, stage, med, slots, params
            )
        else:
            continue  # within Spark's recommended tasks per slot: nothing to judge
        judged += 1
        key = (int(severity), extra_wall + extra_core / slots)
        if worst is None or key > worst[0]:
            worst = (key, stage, med, kind, suggested, share)
        severity_all = max(severity_all, severity)
        if severity == NONE:
            continue
        rows.append((stage.stage_id, kind, stage.num_tasks, round(med), suggested, int(severity)))
        flagged.append((key, stage, kind, suggested))
        wall_ms += extra_wall
        core_ms += extra_core
    if worst is None or judged == 0:
        return no_data(
            f"No stage with more than {params.tiny_min_tasks_per_slot:g} tasks per task slot or "
            f"at most as many tasks as {fmt_count(slots, 'task slot')}",
        )
    if severity_all == NONE:
        # Within every threshold: say so rather than print a suggestion that reads like a problem.
        return make_result(
            severity=NONE,
            value=None,
            title=(
                f"Task sizes within limits in the {fmt_count(judged, 'stage')} judged "
                f"({fmt_count(slots, 'task slot')})"
            ),
        )
    conf, advice = _fix(app, flagged, slots)
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
    best = max(flagged, key=lambda f: f[0])
    return make_result(
        severity=severity_all,
        value=_median_ms(best[1]),
        title=_title(*worst[1:], slots),
        details=details,
        advice=advice,
        impact=impact,
        conf=conf,
        stages=ordered_refs((f[0], f[1]) for f in flagged),
    )


def _title(
    stage: StageSummary, med: float, kind: str, suggested: int, share: float | None, slots: int
) -> str:
    """The worst stage's finding in words (``share`` of the wall time for few long tasks)."""
    shape = "" if share is None else f", {share:.0%} of the application's wall time"
    return (
        f"Stage {stage.stage_id}: {fmt_count(stage.num_tasks, 'task')} with median "
        f"{fmt_ms(med)} ({kind}, {fmt_count(slots, 'task slot')}{shape}); suggest "
        f"{suggested} partitions"
    )


def _fix(
    app: AppData, flagged: list[tuple[tuple[int, float], StageSummary, str, int]], slots: int
) -> tuple[tuple[Setting, ...], str]:
    """Settings for the flagged stages, worst first, and a sentence per kind of problem."""
    groups: list[tuple[Setting, ...]] = []
    sentences: list[str] = []
    for _, stage, kind, suggested in sorted(flagged, key=lambda f: f[0], reverse=True)[:3]:
        settings, how = partition_settings(app, stage, suggested, slots)
        extra: tuple[Setting, ...] = ()
        props, version = app.spark_properties, app.spark_version
        if (
            kind == TINY
            and stage.shuffle_read_bytes > 0
            and not uses_rdd_api(app)
            and effective_bool(props, AQE, version)
            and not effective_bool(props, COALESCE, version)
        ):
            extra = ((COALESCE, "true"),)
            how += "; AQE partition coalescing was switched off"
        groups.append((*settings, *extra))
        verb = "fewer, larger" if kind == TINY else "more"
        fix = (
            f"set {', '.join(f'{k}={v}' for k, v in (*settings, *extra))}"
            if settings or extra
            else "change the code (no setting controls it)"
        )
        sentences.append(
            f"Stage {stage.stage_id} ({kind}) needs {verb} partitions, about {suggested}: "
            f"{how}; {fix}."
        )
    return merge_conf(*groups), " ".join(dict.fromkeys(sentences))
