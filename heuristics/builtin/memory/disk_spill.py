"""Disk spill: how much a stage spilled compared with the data it processed.

**What it measures.** Per stage, `memory bytes spilled / max(input, output, shuffle read,
shuffle write bytes)`. "Memory bytes spilled" is the in-memory (deserialized) size of the data
Spark had to write to disk because execution memory ran out; "disk bytes spilled" is what it took
on disk. Stages that spilled less than a minimum are not judged.

**Why it matters.** Spilling serializes data to local disk and reads it back, often several
times for one sort or aggregation. It turns a memory-speed operation into a disk-speed one and
can fill local disks.

**How to fix.**
- Give each task more execution memory: more `spark.executor.memory`, or fewer
  `spark.executor.cores` per executor (memory is shared by concurrent tasks).
- Use more, smaller partitions (`spark.sql.shuffle.partitions`, or `repartition`), so each
  task sorts or aggregates less data at once; with AQE, lower
  `spark.sql.adaptive.advisoryPartitionSizeInBytes`.
- Avoid wide rows in sorts and aggregations; select only the columns you need first.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, Thresholds, make_result, no_data
from heuristics.stats import fmt_bytes, round2, safe_ratio, total_task_cores

NAME = "disk_spill"
TITLE = "Disk spill"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = frozenset({"executors", "stages", "tasks"})

ADVICE = (
    "Tasks ran out of execution memory and spilled to disk. Use more, smaller partitions "
    "(spark.sql.shuffle.partitions), more spark.executor.memory or fewer cores per executor."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the disk spill heuristic."""

    spill_ratio: Thresholds = param(
        Thresholds(0.1, 0.5, 1.0, 2.0),
        "memory bytes spilled / max(input, output, shuffle read, shuffle write) of a stage (ratio; ascending)",
    )
    min_stage_spill_bytes: int = param(
        256 * 1024 * 1024,
        "gate: stages that spilled less than this are not judged (memory bytes spilled; 256 MiB)",
    )
    disk_throughput_bytes_per_s: int = param(
        100_000_000,
        "assumed local disk throughput for the time estimate (bytes per second; 100 MB/s)",
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
    for stage in app.stages:
        if stage.memory_bytes_spilled < max(1, params.min_stage_spill_bytes):
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
    if worst is None:
        return no_data(
            f"No stage spilled at least {fmt_bytes(params.min_stage_spill_bytes)} "
            f"({fmt_bytes(total_spill)} in total)",
        )
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
        advice=ADVICE,
        impact=impact,
    )
