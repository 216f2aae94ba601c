"""Retention: ``sparkscope prune --keep-days N`` deletes the applications that ended more than N
days ago with everything stored for them, in bounded batches, each its own transaction.

Per batch: the rows of every table in ``APP_CHILD_TABLES`` (the tables of rows owned by an
application, which every feature that adds one extends), then the applications themselves, whose
foreign keys cascade to the rest (predictions, what-if inputs, and any table that references an
application with ``ON DELETE CASCADE``); the day summary loses their contribution
(:func:`sparkscope.accounting.day_summary.read` before, ``apply`` after), and the next-run
forecasts of their recurring keys forget the runs that went, so the predictions of the runs that
stay are kept as they were computed (from the history they had) instead of being redone. Outbox
messages that reached a final state (sent, given up, muted, folded) more than N days ago go too.

A run killed between batches leaves whole batches done and the rest for the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, case, delete, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.accounting import day_summary
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import Application
from sparkscope.models.notify import NotifyOutbox
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.notify.outbox import FINAL

DAY_MS = 86_400_000
BATCH = 1000


@dataclass
class Pruned:
    """What one prune did."""

    applications: int = 0
    messages: int = 0
    batches: int = 0
    seconds: float = 0.0


def cutoff_ms(now_ms: int, keep_days: int) -> int:
    """The end time before which an application is pruned."""
    return now_ms - keep_days * DAY_MS


def _ended_before(cutoff: int) -> list[ColumnElement[bool]]:
    """The two ways an application is old, each on its own so that the first can read the
    end-time index: it ended before the cutoff; it has no end time and was loaded before it."""
    return [
        Application.end_time_ms < cutoff,
        and_(Application.end_time_ms.is_(None), Application.fetched_at_ms < cutoff),
    ]


def count_old(session: Session, cutoff: int) -> int:
    """How many applications a prune with this cutoff would delete."""
    return int(session.scalar(select(func.count()).where(or_(*_ended_before(cutoff)))) or 0)


def delete_applications(session: Session, pks: list[int]) -> None:
    """Delete these applications and all their rows, in the caller's transaction."""
    if not pks:
        return
    forgotten = session.execute(
        select(RunPrediction.server_id, RunPrediction.key, func.count())
        .where(RunPrediction.application_id.in_(pks))
        .group_by(RunPrediction.server_id, RunPrediction.key)
    ).all()
    before = day_summary.read(session, pks)
    for table in APP_CHILD_TABLES:
        session.execute(delete(table).where(table.application_id.in_(pks)))
    session.execute(delete(Application).where(Application.id.in_(pks)))
    day_summary.apply(session, before, {})
    for server_id, key, n in sorted(forgotten):
        where = (RecurringForecast.server_id == server_id, RecurringForecast.key == key)
        left = case((RecurringForecast.n_runs > n, RecurringForecast.n_runs - n), else_=0)
        session.execute(update(RecurringForecast).where(*where).values(n_runs=left))
        session.execute(delete(RecurringForecast).where(*where, RecurringForecast.n_runs <= 0))


def prune(
    factory: sessionmaker[Session],
    now_ms: int,
    keep_days: int,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> Pruned:
    """Delete what is older than ``keep_days``, ``batch`` applications per transaction."""
    started = time.perf_counter()
    cutoff = cutoff_ms(now_ms, keep_days)
    done = Pruned()
    for old in _ended_before(cutoff):
        while True:
            with factory() as session, session.begin():
                pks = list(session.scalars(select(Application.id).where(old).limit(batch)))
                delete_applications(session, pks)
            if not pks:
                break
            done.applications += len(pks)
            done.batches += 1
            if progress is not None:
                progress(done.applications)
    while True:
        with factory() as session, session.begin():
            ids = list(
                session.scalars(
                    select(NotifyOutbox.id)
                    .where(NotifyOutbox.state.in_(FINAL), NotifyOutbox.created_ms < cutoff)
                    .order_by(NotifyOutbox.id)
                    .limit(batch)
                )
            )
            if ids:
                session.execute(delete(NotifyOutbox).where(NotifyOutbox.id.in_(ids)))
        if not ids:
            break
        done.messages += len(ids)
    done.seconds = time.perf_counter() - started
    return done
