"""Disk spill: how much a stage spilled compared with the data it processed.

**What it measures.** Per stage, `memory bytes spilled / max(input, output, shuffle read,
shuffle write bytes)`. "Memory bytes spilled" is the in-memory (deserialized) size of the data
Spark had to write to disk because execution memory ran out; "disk bytes spilled" is what it took
on disk. Every stage that spilled is judged; the time spilling cost (the disk bytes written and
read back at an assumed disk throughput) caps the severity.

**Why it matters.** Spilling serializes data to local disk and reads it back, often several
times for one sort or aggregation. It turns a memory-speed operation into a disk-speed one and
can fill local disks.

**How to fix.** The finding computes, from the stage's spill per task and the execution memory
each task had (heap − 300 MiB reserved, × `spark.memory.fraction` 0.6, ÷ concurrent tasks), the
partition count at which each task's data would fit, and names the setting that controls the
stage's partitions with that value (`spark.sql.shuffle.partitions`,
`spark.sql.adaptive.advisoryPartitionSizeInBytes`, `spark.sql.files.maxPartitionBytes`, or
`repartition(n)` in the code when no setting does). The other fix is more memory per task: the
advice gives the `spark.executor.memory` (`spark.driver.memory` in local mode) that would hold
it, or fewer `spark.executor.cores`. Avoid wide rows in sorts and aggregations; select only the
columns you need first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData, StageSummary
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Setting, Severity, make_result, no_data
from heuristics.sparkconf import (
    MIB,
    driver_memory_bytes,
    executor_cores,
    executor_memory_bytes,
    is_local_mode,
)
from heuristics.stats import fmt_bytes, round2, safe_ratio, total_task_cores
from heuristics.thresholds import Thresholds
from heuristics.tuning import (
    RESERVED_HEAP_BYTES,
    execution_memory_per_task,
    fmt_memory_setting,
    merge_conf,
    ordered_refs,
    partition_settings,
)

NAME = "disk_spill"
TITLE = "Disk spill"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: no size gate (severity capped by cost), settings and stages (issue 19)
INPUTS = frozenset({"executors", "jobs", "spark_properties", "spark_version", "stages", "tasks"})

ADVICE = "Tasks ran out of execution memory and spilled to disk."


@dataclass(frozen=True)
class Params:
    """Parameters of the disk spill heuristic."""

    spill_ratio: Thresholds = param(
        Thresholds(0.01, 0.5, 1.0, 2.0),
        "memory bytes spilled / max(input, output, shuffle read, shuffle write) of a stage; "
        "from 1% a stage ran out of execution memory for a real part of its data (ratio; ascending)",
    )
    disk_throughput_bytes_per_s: int = param(
        100_000_000,
        "assumed local disk throughput for the time estimate (bytes per second; 100 MB/s)",
        minimum=1,
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag stages that spilled a large share of the data they processed."""
    if not app.stages:
        return no_data("No stages available")
    total_spill = sum(s.memory_bytes_spilled for s in app.stages)
    if total_spill == 0:
        return no_data("No stage spilled")
    slots = total_task_cores(app)
    severity_all = Severity.NONE
    worst: tuple[float, str] | None = None
    rows: list[tuple[object, ...]] = []
    disk_bytes = 0
    flagged: list[tuple[tuple[int, int], StageSummary]] = []
    for stage in app.stages:
        if stage.memory_bytes_spilled <= 0:
            continue
        processed = max(
            stage.input_bytes,
            stage.output_bytes,
            stage.shuffle_read_bytes,
            stage.shuffle_write_bytes,
        )
        ratio = safe_ratio(stage.memory_bytes_spilled, processed)
        severity = params.spill_ratio.severity_of(ratio)
        if worst is None or ratio > worst[0]:
            worst = (
                ratio,
                f"Stage {stage.stage_id} spilled {fmt_bytes(stage.memory_bytes_spilled)} "
                f"({ratio:.0%} of {fmt_bytes(processed)} processed, "
                f"{fmt_bytes(stage.disk_bytes_spilled)} on disk)",
            )
        severity_all = max(severity_all, severity)
        if severity == Severity.NONE:
            continue
        stage_tasks = [
            t
            for t in app.tasks
            if t.stage_id == stage.stage_id and t.stage_attempt_id == stage.attempt_id
        ]
        top = max(stage_tasks, key=lambda t: t.memory_bytes_spilled, default=None)
        rows.append(
            (
                stage.stage_id,
                stage.memory_bytes_spilled,
                stage.disk_bytes_spilled,
                processed,
                round2(ratio),
                None if top is None else top.task_id,
                None if top is None else top.memory_bytes_spilled,
                int(severity),
            )
        )
        disk_bytes += stage.disk_bytes_spilled
        flagged.append(((int(severity), stage.disk_bytes_spilled), stage))
    if worst is None or severity_all == Severity.NONE:
        title = (
            "No spill of concern"
            if worst is None
            else f"No spill of concern; largest: {worst[1][0].lower()}{worst[1][1:]}"
        )
        return make_result(
            severity=Severity.NONE, value=None if worst is None else worst[0], title=title
        )
    conf, advice = _fix(app, flagged, slots)
    # Spilled bytes are written once and read back once.
    task_s = 2 * disk_bytes / max(1, params.disk_throughput_bytes_per_s)
    impact = Impact(
        wall_seconds=task_s / slots,
        core_hours=task_s / 3600,
        formula=(
            f"2 × disk bytes spilled (write + read back) ÷ "
            f"{params.disk_throughput_bytes_per_s / 1e6:.0f} MB/s assumed disk throughput = "
            "task time (core-hours); wall = that ÷ task slots"
        ),
    )
    details = Details(
        (
            "stage",
            "memory_bytes_spilled",
            "disk_bytes_spilled",
            "processed_bytes",
            "ratio",
            "top_spill_task_id",
            "top_spill_task_memory_bytes_spilled",
            "severity",
        ),
        tuple(rows),
    )
    return make_result(
        severity=severity_all,
        value=worst[0],
        title=worst[1],
        details=details,
        advice=advice,
        impact=impact,
        conf=conf,
        stages=ordered_refs(flagged),
    )


def _fix(
    app: AppData, flagged: list[tuple[tuple[int, int], StageSummary]], slots: int
) -> tuple[tuple[Setting, ...], str]:
    """Partitions that would let each task's data fit its execution memory, as the setting that
    controls the worst stage's partitions, and the memory that would hold it instead."""
    props = app.spark_properties
    local = is_local_mode(props) or all(e.is_driver for e in app.executors)
    heap = driver_memory_bytes(props) if local else executor_memory_bytes(props)
    cores = slots if local else (executor_cores(props) or 1)
    setting = "spark.driver.memory" if local else "spark.executor.memory"
    per_task_memory = max(1.0, execution_memory_per_task(app, heap, cores))
    groups: list[tuple[Setting, ...]] = []
    sentences: list[str] = []
    for _, stage in sorted(flagged, key=lambda f: f[0], reverse=True):
        spill_per_task = stage.memory_bytes_spilled / max(1, stage.num_tasks)
        partitions = math.ceil(stage.num_tasks * (1 + spill_per_task / per_task_memory))
        settings, how = partition_settings(app, stage, partitions, slots)
        if not sentences or (settings and not any(groups)):
            where = (
                f"set {', '.join(f'{k}={v}' for k, v in settings)}"
                if settings
                else "change the code"
            )
            sentences.append(
                f"Stage {stage.stage_id} spilled {fmt_bytes(spill_per_task)} per task with about "
                f"{fmt_bytes(per_task_memory)} of execution memory each: about {partitions} "
                f"partitions would fit ({how}; {where})."
            )
        groups.append(settings)
    _, worst = max(flagged, key=lambda f: f[0])
    spill_per_task = worst.memory_bytes_spilled / max(1, worst.num_tasks)
    wanted_heap = suggested_heap_bytes(heap, (per_task_memory + spill_per_task) / per_task_memory)
    advice = (
        f"{ADVICE} {' '.join(sentences)} Or give each task more memory: "
        f"{setting}={fmt_memory_setting(wanted_heap)}, or fewer cores per executor."
    )
    conf = merge_conf(*groups)
    return conf, advice


def suggested_heap_bytes(heap: int, fraction: float) -> int:
    """The heap whose execution memory is ``fraction`` times that of ``heap``, rounded up to
    512 MiB (the 300 MiB Spark reserves stays the same)."""
    usable = max(0, heap - RESERVED_HEAP_BYTES) * fraction
    step = 512 * MIB
    return max(1, math.ceil((usable + RESERVED_HEAP_BYTES) / step)) * step
