"""The timeline page: an application's executors, jobs and stage attempts on one time axis, and
its allocated and busy task slots (sparkscope.accounting.timeline), read from the stored rows
only; every task's times when its event log stored them. Nothing is written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heuristics.sparkconf import is_local_mode
from sparkscope.accounting.timeline import ExecutorLife, SlotTimeline, StageSpan, slot_timeline
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Job,
    Stage,
    StageExecutor,
)
from sparkscope.models.eventlog import StageTaskTimes, decode_task_times
from sparkscope.models.fetch import HistoryServer
from sparkscope.queries.stage_tasks import executor_timeline


class JobRow(NamedTuple):
    """One job as the timeline draws it."""

    job_id: int
    name: str | None
    description: str | None
    status: str
    submission_time_ms: int | None
    completion_time_ms: int | None
    num_tasks: int


class StageRow(NamedTuple):
    """One stage attempt as the timeline draws it."""

    stage_id: int
    attempt_id: int
    name: str | None
    status: str
    num_tasks: int
    num_failed_tasks: int
    submission_time_ms: int | None
    first_task_launched_time_ms: int | None
    completion_time_ms: int | None
    executor_run_time_ms: int


#: Plain tuples, not SQLAlchemy rows: a row's attribute costs microseconds, thousands a page.
JOB_COLUMNS = [getattr(Job, f) for f in JobRow._fields]
STAGE_COLUMNS = [getattr(Stage, f) for f in StageRow._fields]


@dataclass
class TimelineDetail:
    """Everything the timeline page shows."""

    app: Application
    server: HistoryServer
    local: bool
    jobs: list[JobRow]
    stages: list[StageRow]
    slots: SlotTimeline
    #: Stage attempts with tasks whose task times the event log holds only in part (capped).
    partial_task_times: int


def stage_start_ms(stage: Any) -> int | None:
    """When a stage attempt's span starts: its first task launch, else its submission."""
    first = stage.first_task_launched_time_ms
    return first if first is not None else stage.submission_time_ms


def _window(app: Application, stages: list[Any], executors: list[ExecutorLife]) -> tuple[int, int]:
    # The SHS gives a finished application a start and an end; the fallbacks keep odd rows total.
    times = [t for s in stages for t in (stage_start_ms(s), s.completion_time_ms) if t is not None]
    times += [e.add_ms for e in executors if e.add_ms is not None]
    start = app.start_time_ms if app.start_time_ms is not None else min(times, default=0)
    if app.end_time_ms is not None:
        end = app.end_time_ms
    elif app.duration_ms is not None:
        end = start + app.duration_ms
    else:
        end = max(times, default=start)
    return start, max(start, end)


def _task_intervals(session: Session, app_pk: int) -> tuple[dict[tuple[int, int], Any], int]:
    """(stage, attempt) -> every task's (launch, finish) in epoch ms, for the stage attempts whose
    event log stored all their tasks; and how many stored only part of them."""
    out: dict[tuple[int, int], Any] = {}
    partial = 0
    rows = session.execute(
        select(
            StageTaskTimes.stage_id,
            StageTaskTimes.attempt_id,
            StageTaskTimes.num_tasks,
            StageTaskTimes.num_stored,
            StageTaskTimes.first_launch_ms,
            StageTaskTimes.data,
        ).where(StageTaskTimes.application_id == app_pk)
    )
    for sid, aid, num_tasks, num_stored, first, data in rows:
        if num_stored < num_tasks or first is None:
            partial += 1
            continue
        cols = decode_task_times(data, first).columns
        out[(sid, aid)] = [
            (first + off, first + off + dur)
            for off, dur in zip(cols["launch_offset_ms"], cols["duration_ms"], strict=True)
            if dur >= 0
        ]
    return out, partial


def timeline_detail(session: Session, app: Application) -> TimelineDetail:
    """The timeline of one application (its server's row, jobs, stage attempts and slots)."""
    server = session.get(HistoryServer, app.server_id)
    assert server is not None  # the foreign key guarantees it
    executors = [
        ExecutorLife(e.executor_id, e.is_driver, e.cores, e.add_time_ms, e.remove_time_ms)
        for e in executor_timeline(session, app.id)
    ]
    master = session.scalar(
        select(EnvironmentProperty.value).where(
            EnvironmentProperty.application_id == app.id,
            EnvironmentProperty.section == "spark",
            EnvironmentProperty.name == "spark.master",
        )
    )
    local = is_local_mode({"spark.master": master or ""}) or not any(
        not e.is_driver for e in executors
    )
    # Core statements on the session's connection: no ORM bookkeeping per row of thousands.
    conn = session.connection()
    jobs = [
        JobRow._make(r)
        for r in conn.execute(
            select(*JOB_COLUMNS).where(Job.application_id == app.id).order_by(Job.job_id)
        )
    ]
    stages = [
        StageRow._make(r)
        for r in conn.execute(
            select(*STAGE_COLUMNS)
            .where(Stage.application_id == app.id)
            .order_by(Stage.stage_id, Stage.attempt_id)
        )
    ]
    task_times, partial = _task_intervals(session, app.id)
    durations: dict[tuple[int, int], int] = {}
    if any(not s.executor_run_time_ms and s.num_tasks for s in stages):
        # No run time stored: the stage's task durations, summed over its executors.
        durations = {
            (sid, aid): int(total or 0)
            for sid, aid, total in session.execute(
                select(
                    StageExecutor.stage_id,
                    StageExecutor.attempt_id,
                    func.sum(StageExecutor.task_time_ms),
                )
                .where(StageExecutor.application_id == app.id)
                .group_by(StageExecutor.stage_id, StageExecutor.attempt_id)
            )
        }
    spans = [
        StageSpan(
            s.stage_id,
            s.attempt_id,
            stage_start_ms(s),
            s.completion_time_ms,
            s.executor_run_time_ms or durations.get((s.stage_id, s.attempt_id), 0),
            task_times.get((s.stage_id, s.attempt_id)),
        )
        for s in stages
    ]
    start, end = _window(app, stages, executors)
    return TimelineDetail(
        app=app,
        server=server,
        local=local,
        jobs=jobs,
        stages=stages,
        slots=slot_timeline(start, end, executors, spans, local),
        partial_task_times=partial,
    )
