"""Stage failures: stage attempts that failed, weighted by whether a retry recovered them.

**What it measures.** Every stage attempt with status FAILED counts 1 when the stage never
completed, and a smaller weight (default 0.5) when a later attempt of the same stage completed.
The severity follows the weighted count; the details list each failed attempt with Spark's
failure reason.

**Why it matters.** A failed stage attempt throws away the work of its tasks and, when shuffle
output was lost, forces parent stages to run again. Recovered failures cost time; unrecovered
ones fail the job (and the job failures finding, which no cost caps, reports that). The time the
failed attempts took caps this finding's severity.

**How to fix.** Read the failure reason. `FetchFailed` points at lost executors or shuffle
service problems (see task failures); repeated task failures point at memory or user code.
Tasks killed for exceeding memory need more `spark.executor.memoryOverhead` or smaller
partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.failure_text import keep_message
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, make_result, no_data
from heuristics.stats import stage_duration_ms
from heuristics.thresholds import Thresholds
from heuristics.tuning import ordered_refs

NAME = "stage_failures"
TITLE = "Stage failures"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: whole failure messages, NONE titles (issue 12); 3: capped by cost, stages
INPUTS = frozenset({"stages"})

ADVICE = (
    "Stage attempts failed and their work was redone or lost. Read the failure reasons: fetch "
    "failures mean lost shuffle output (executors lost or killed), repeated task failures mean "
    "memory problems or a bug."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the stage failures heuristic."""

    weighted_failures: Thresholds = param(
        Thresholds(0.5, 1.0, 2.0, 4.0),
        "failed stage attempts, each weighing 1, or recovered_weight if a retry completed (count; ascending)",
    )
    recovered_weight: float = param(
        0.5,
        "weight of a failed attempt whose stage later completed (weight)",
        maximum=1.0,
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Count failed stage attempts, discounting those a retry recovered."""
    if not app.stages:
        return no_data("No stages recorded")
    completed = {s.stage_id for s in app.stages if s.status.upper() == "COMPLETE"}
    failed = [s for s in app.stages if s.status.upper() == "FAILED"]
    weighted = 0.0
    rows = []
    wall_ms = 0
    run_ms = 0
    for stage in failed:
        recovered = stage.stage_id in completed
        weighted += params.recovered_weight if recovered else 1.0
        wall_ms += stage_duration_ms(stage) or 0
        run_ms += stage.executor_run_time_ms
        rows.append(
            (
                stage.stage_id,
                stage.attempt_id,
                stage.name,
                recovered,
                stage.num_failed_tasks,
                keep_message(stage.failure_reason),
            )
        )
    severity = params.weighted_failures.severity_of(weighted)
    n_rec = sum(1 for r in rows if r[3])
    title = f"{len(failed)} failed stage attempts ({n_rec} recovered by a retry)"
    details = Details(
        ("stage", "attempt", "name", "recovered", "failed_tasks", "failure_reason"), tuple(rows)
    )
    impact = Impact(
        wall_seconds=wall_ms / 1000,
        core_hours=run_ms / 3_600_000,
        formula="wall = Σ failed attempt durations; core-hours = Σ their task run time",
    )
    return make_result(
        severity=severity,
        value=weighted,
        title=title,
        details=details,
        advice=ADVICE,
        impact=impact,
        stages=ordered_refs(
            ((s.stage_id not in completed, s.executor_run_time_ms), s) for s in failed
        ),
    )
