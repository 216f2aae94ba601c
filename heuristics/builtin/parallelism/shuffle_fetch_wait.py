"""Shuffle fetch wait: time tasks spent blocked waiting for shuffle data.

**What it measures.** For stages that read shuffle data, `shuffle fetch wait time / executor run
time` (both summed over the stage's tasks), for every stage that read shuffle data. The waiting
time (core-hours, and that over the task slots for wall time) caps the severity, so a short
stage is at most a LOW note.

**Why it matters.** While a task waits for remote shuffle blocks, its core does nothing. A high
share points at an overloaded network, busy or lost executors serving blocks, a slow external
shuffle service, or too many tiny shuffle blocks.

**How to fix.** Reduce shuffled data (filter and project early, broadcast small join sides),
use fewer, larger shuffle partitions when blocks are tiny (AQE coalescing), raise
`spark.reducer.maxSizeInFlight` and `spark.shuffle.io.numConnectionsPerPeer` for fast networks,
and check the health of the hosts serving shuffle data.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.stats import fmt_bytes, fmt_ms, round2, safe_ratio, total_task_cores
from heuristics.thresholds import Thresholds
from heuristics.tuning import ordered_refs

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE

NAME = "shuffle_fetch_wait"
TITLE = "Shuffle fetch wait"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: no size gates (severity capped by cost), stages (issue 19)
INPUTS = frozenset({"executors", "stages"})

ADVICE = (
    "Tasks spend a large share of their time waiting for shuffle blocks. Shuffle less data, "
    "avoid tiny shuffle blocks, tune spark.reducer.maxSizeInFlight, and check busy or failing "
    "hosts."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the shuffle fetch wait heuristic."""

    fetch_wait_ratio: Thresholds = param(
        Thresholds(0.1, 0.2, 0.3, 0.5),
        "shuffle fetch wait time / executor run time of a stage (ratio; ascending)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the share of task time spent waiting on shuffle fetches."""
    readers = [s for s in app.stages if s.shuffle_read_bytes > 0]
    if not readers:
        return no_data("No stage read shuffle data")
    slots = total_task_cores(app)
    severity_all = NONE
    worst: tuple[float, str] | None = None
    rows = []
    wait_ms = 0
    flagged = []
    for stage in readers:
        if stage.executor_run_time_ms <= 0:
            continue
        ratio = safe_ratio(stage.shuffle_fetch_wait_ms, stage.executor_run_time_ms)
        severity = params.fetch_wait_ratio.severity_of(ratio)
        if worst is None or ratio > worst[0]:
            worst = (
                ratio,
                f"Stage {stage.stage_id} waited {ratio:.0%} of task time on shuffle fetches "
                f"({fmt_ms(stage.shuffle_fetch_wait_ms)} of {fmt_ms(stage.executor_run_time_ms)}, "
                f"{fmt_bytes(stage.shuffle_read_bytes)} read)",
            )
        severity_all = max(severity_all, severity)
        if severity == NONE:
            continue
        rows.append(
            (
                stage.stage_id,
                stage.shuffle_read_bytes,
                stage.shuffle_fetch_wait_ms,
                stage.executor_run_time_ms,
                round2(ratio),
                int(severity),
            )
        )
        wait_ms += stage.shuffle_fetch_wait_ms
        flagged.append(((int(severity), stage.shuffle_fetch_wait_ms), stage))
    if worst is None:
        return no_data("No shuffle-reading stage ran tasks")
    if severity_all == NONE:
        return make_result(
            severity=NONE,
            value=worst[0],
            title=f"No shuffle fetch wait of concern; largest: {worst[1][0].lower()}{worst[1][1:]}",
        )
    impact = Impact(
        wall_seconds=wait_ms / 1000 / slots,
        core_hours=wait_ms / 3_600_000,
        formula="core-hours = Σ fetch wait time of flagged stages; wall = that ÷ task slots",
    )
    details = Details(
        ("stage", "shuffle_read_bytes", "fetch_wait_ms", "run_time_ms", "ratio", "severity"),
        tuple(rows),
    )
    return make_result(
        severity=severity_all,
        value=worst[0],
        title=worst[1],
        details=details,
        advice=ADVICE,
        impact=impact,
        stages=ordered_refs(flagged),
    )
