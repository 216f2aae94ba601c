"""Job failures: Spark jobs of the application that failed.

**What it measures.** The share of jobs whose status is FAILED; the severity rises with that
share. Any failed job is at least MODERATE: its action's result is missing, whatever the share.
When the application's last job failed, the application most likely ended with that error (the
SHS still lists it as completed), so the finding is at least SEVERE.

**Why it matters.** A failed job means an action (a write, a `collect()`, a `count()`) did not
produce its result; its work was wasted, and the application either failed or silently carried
on without that result.

**Not capped by cost.** A failed job lost a result, whatever the time it took: its severity is
not capped by the cost of its stages (its impact is still shown).

**How to fix.** Open the failed job's stages (see the stage failures and task failures
findings) to find the root cause: out-of-memory, lost executors, fetch failures, or an error in
user code. Retries (`spark.task.maxFailures`, `spark.stage.maxConsecutiveAttempts`) only help
for transient causes.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from heuristics.thresholds import Thresholds
from heuristics.tuning import ordered_refs

NAME = "job_failures"
TITLE = "Job failures"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 2  # 2: not capped by cost, stages (issue 19)
INPUTS = frozenset({"jobs", "stages"})

ADVICE = (
    "Some jobs failed, so their work was lost. Look at the failed stages and task errors for the "
    "root cause (memory, lost executors, fetch failures or a bug) before raising retry limits."
)


@dataclass(frozen=True)
class Params:
    """Parameters of the job failures heuristic."""

    failed_job_rate: Thresholds = param(
        Thresholds(0.1, 0.3, 0.5, 0.5),
        "failed jobs / all jobs; any failed job is at least MODERATE, a failed last job SEVERE (ratio; ascending)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Rate the share of failed jobs."""
    if not app.jobs:
        return no_data("No jobs recorded")
    failed = [j for j in app.jobs if j.status.upper() == "FAILED"]
    rate = len(failed) / len(app.jobs)
    severity = params.failed_job_rate.severity_of(rate)
    last = max(app.jobs, key=lambda j: (j.submission_time_ms or 0, j.job_id))
    if failed:
        severity = max(severity, Severity.MODERATE)
    if last.status.upper() == "FAILED":
        severity = max(severity, Severity.SEVERE)
    title = f"{len(failed)} of {len(app.jobs)} jobs failed ({rate:.0%})"
    if last.status.upper() == "FAILED":
        title += f"; the last job ({last.job_id}) failed, so the application probably did too"
    failed_stage_ids = {sid for j in failed for sid in j.stage_ids}
    rows = []
    wall_ms = 0
    for job in failed:
        duration = (
            None
            if job.submission_time_ms is None or job.completion_time_ms is None
            else job.completion_time_ms - job.submission_time_ms
        )
        wall_ms += duration or 0
        rows.append(
            (
                job.job_id,
                job.name,
                job.num_tasks,
                job.num_failed_tasks,
                job.num_failed_stages,
                duration,
            )
        )
    run_ms = sum(s.executor_run_time_ms for s in app.stages if s.stage_id in failed_stage_ids)
    details = Details(
        ("job", "name", "tasks", "failed_tasks", "failed_stages", "duration_ms"), tuple(rows)
    )
    impact = Impact(
        wall_seconds=wall_ms / 1000,
        core_hours=run_ms / 3_600_000,
        formula="wall = Σ failed job durations; core-hours = Σ task run time of their stages",
    )
    failed_stages = [
        ((s.status.upper() == "FAILED", s.executor_run_time_ms), s)
        for s in app.stages
        if s.stage_id in failed_stage_ids
    ]
    return make_result(
        severity=severity,
        value=rate,
        title=title,
        details=details,
        advice=ADVICE,
        impact=impact,
        stages=ordered_refs(failed_stages),
        cost_capped=False,
    )
