"""Wait time of an application: what it waited for rather than computed.

Part of the resource accounting (`sparkscope.accounting.resources`), pure like it: from `AppData` alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, ExecutorSummary, StageSummary
from sparkscope.advisor.intervals import union_length

MS_PER_S = 1000


def stage_wait_ms(stage: StageSummary) -> int | None:
    """How long a stage attempt waited between its submission and its first task launch, never
    negative; None when either time is unknown. The stage table and the total use this rule."""
    if stage.submission_time_ms is None or stage.first_task_launched_time_ms is None:
        return None
    return max(0, stage.first_task_launched_time_ms - stage.submission_time_ms)


@dataclass(frozen=True)
class StageWait:
    """Time one stage attempt waited between submission and its first task launch."""

    stage_id: int
    attempt_id: int
    wait_s: float

    def to_dict(self) -> dict[str, object]:
        """JSON-able form."""
        return {"stage_id": self.stage_id, "attempt_id": self.attempt_id, "wait_s": self.wait_s}


@dataclass(frozen=True)
class Wait:
    """Wait-time parts; None where the SHS data cannot tell."""

    to_first_executor_s: float | None
    driver_only_s: float
    stage_scheduling_delay_s: float
    per_stage: tuple[StageWait, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-able form."""
        return {
            "to_first_executor_s": self.to_first_executor_s,
            "driver_only_s": self.driver_only_s,
            "stage_scheduling_delay_s": self.stage_scheduling_delay_s,
            "per_stage": [s.to_dict() for s in self.per_stage],
        }


def wait_time(
    app: AppData,
    local: bool,
    non_driver: list[ExecutorSummary],
    drivers: list[ExecutorSummary],
    start_ms: int,
    end_ms: int,
) -> Wait:
    """Wait-time parts of one application: until its first executor (local mode: the driver),
    with only the driver busy (no job running), and between stage submission and first task."""
    pool = drivers if local else non_driver
    adds = [e.add_time_ms for e in pool if e.add_time_ms is not None]
    to_first_executor_s = None if not adds else max(0, min(adds) - start_ms) / MS_PER_S

    per_stage = tuple(
        StageWait(s.stage_id, s.attempt_id, wait_ms / MS_PER_S)
        for s in app.stages
        if (wait_ms := stage_wait_ms(s)) is not None
    )
    return Wait(
        to_first_executor_s=to_first_executor_s,
        driver_only_s=_uncovered_ms(app, start_ms, end_ms) / MS_PER_S,
        stage_scheduling_delay_s=sum(s.wait_s for s in per_stage),
        per_stage=per_stage,
    )


def _uncovered_ms(app: AppData, start_ms: int, end_ms: int) -> int:
    # A job still open at the end (failed app) ran until the application ended.
    intervals = (
        (
            max(j.submission_time_ms, start_ms),
            min(end_ms if j.completion_time_ms is None else j.completion_time_ms, end_ms),
        )
        for j in app.jobs
        if j.submission_time_ms is not None
    )
    return max(0, end_ms - start_ms - union_length(intervals))
