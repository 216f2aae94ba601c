"""What an event-log source stores beyond the History Server's rows, for the stage page and the
timeline: every task of a stage attempt, the stage DAG, and the executors' add/remove times.

Applications fetched from a History Server have no task times and no DAG: the functions answer
``None`` / an empty mapping for them (:func:`has_event_log_data` tells which case applies).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from sparkscope.models.application import Executor
from sparkscope.models.eventlog import (
    StageParent,
    StageTaskTimes,
    TaskTimes,
    decode_task_times,
)


@dataclass(frozen=True)
class StageTasks:
    """Every task attempt of one stage attempt, decoded.

    ``tasks.columns`` holds one list per column of
    :data:`sparkscope.models.eventlog.TASK_TIME_COLUMNS` (launch offsets from
    ``tasks.first_launch_ms``; run, CPU, GC and fetch-wait times -1 for a task without metrics;
    ``executor`` indexes ``tasks.executors``; status 0 success, 1 failed, 2 killed, 3 other).
    ``num_tasks`` > ``num_stored`` when the stage had more tasks than were kept (sorted by launch).
    """

    stage_id: int
    attempt_id: int
    num_tasks: int
    num_stored: int
    tasks: TaskTimes


def has_event_log_data(session: Session, app_pk: int) -> bool:
    """Whether the application came with event-log extras (task times, DAG)."""
    for table in (StageTaskTimes, StageParent):
        if session.scalar(select(exists().where(table.application_id == app_pk))):
            return True
    return False


def stage_task_times(
    session: Session, app_pk: int, stage_id: int, attempt_id: int
) -> StageTasks | None:
    """Every task of one stage attempt, or None (not from an event log, or no task ran)."""
    row = session.execute(
        select(
            StageTaskTimes.num_tasks,
            StageTaskTimes.num_stored,
            StageTaskTimes.first_launch_ms,
            StageTaskTimes.data,
        ).where(
            StageTaskTimes.application_id == app_pk,
            StageTaskTimes.stage_id == stage_id,
            StageTaskTimes.attempt_id == attempt_id,
        )
    ).first()
    if row is None:
        return None
    return StageTasks(stage_id, attempt_id, row[0], row[1], decode_task_times(row[3], row[2]))


def stage_parents(session: Session, app_pk: int) -> dict[int, list[int]]:
    """Stage id -> parent stage ids (ascending) as the event log states them; stages without
    parents are absent, and so is every stage of an application not read from its log."""
    out: dict[int, list[int]] = {}
    for sid, parent in session.execute(
        select(StageParent.stage_id, StageParent.parent_id)
        .where(StageParent.application_id == app_pk)
        .order_by(StageParent.stage_id, StageParent.parent_id)
    ):
        out.setdefault(sid, []).append(parent)
    return out


@dataclass(frozen=True)
class ExecutorSpan:
    """One executor's life for a timeline (ms since the epoch; None when unknown / still alive)."""

    executor_id: str
    is_driver: bool
    cores: int
    add_time_ms: int | None
    remove_time_ms: int | None
    remove_reason: str | None


def executor_timeline(session: Session, app_pk: int) -> list[ExecutorSpan]:
    """The executors' add and remove times, by add time (the same columns for both sources)."""
    rows = session.execute(
        select(
            Executor.executor_id,
            Executor.is_driver,
            Executor.total_cores,
            Executor.add_time_ms,
            Executor.remove_time_ms,
            Executor.remove_reason,
        ).where(Executor.application_id == app_pk)
    ).all()
    spans = [ExecutorSpan(r[0], bool(r[1]), int(r[2]), r[3], r[4], r[5]) for r in rows]
    return sorted(spans, key=lambda s: (s.add_time_ms or 0, s.executor_id))
