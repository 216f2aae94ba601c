"""The ledger of derived work still to do (table ``pipeline_pending``).

A step that cannot run inside the transaction that makes it necessary (it works on a whole
recurring key or server, not one application) is queued in that transaction and taken off the
ledger in the transaction that does it. A killed or failed run therefore leaves its work on the
ledger, and any later ``fetch`` or ``analyze`` finishes it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from sqlalchemy import Table, delete, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from sparkscope.db import now_ms
from sparkscope.models.pipeline import PipelinePending

#: One queued unit of work: (step, server id, subject).
Work = tuple[str, int, str]


@dataclass(frozen=True)
class Pending:
    """The queued subjects of one step on one server, with the most failed attempts among them."""

    step: str
    server_id: int
    subjects: tuple[str, ...]
    attempts: int


def enqueue(session: Session, work: Iterable[Work]) -> None:
    """Queue work in the caller's transaction (work already queued stays as it is)."""
    rows = [
        {"step": step, "server_id": sid, "subject": subject, "queued_at_ms": now_ms()}
        for step, sid, subject in dict.fromkeys(work)
    ]
    if rows:
        session.execute(_insert(session.get_bind().dialect.name), rows)


@cache
def _insert(dialect: str) -> Any:
    """INSERT that leaves work already queued as it is (built once per dialect)."""
    table = cast(Table, PipelinePending.__table__)
    stmt = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
    return stmt.on_conflict_do_nothing()


def pending(
    session: Session, steps: Sequence[str], server_ids: Sequence[int] | None = None
) -> list[Pending]:
    """What is queued for the given steps, grouped per step and server, in ``steps`` order."""
    query = select(
        PipelinePending.step,
        PipelinePending.server_id,
        PipelinePending.subject,
        PipelinePending.attempts,
    ).where(PipelinePending.step.in_(list(steps)))
    if server_ids is not None:
        query = query.where(PipelinePending.server_id.in_(list(server_ids)))
    groups: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)
    for step, sid, subject, attempts in session.execute(query):
        groups[(step, sid)].append((subject, attempts))
    order = {s: i for i, s in enumerate(steps)}
    return [
        Pending(step, sid, tuple(sorted(s for s, _ in items)), max(a for _, a in items))
        for (step, sid), items in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
    ]


def done(session: Session, step: str, server_id: int, subjects: Iterable[str]) -> None:
    """Take work off the ledger, in the transaction that did it."""
    keys = [(step, server_id, s) for s in subjects]
    for i in range(0, len(keys), 500):
        session.execute(
            delete(PipelinePending).where(
                tuple_(
                    PipelinePending.step, PipelinePending.server_id, PipelinePending.subject
                ).in_(keys[i : i + 500])
            )
        )


def failed(
    session: Session, step: str, server_id: int, subjects: Iterable[str], error: str
) -> None:
    """Record a failed attempt of queued work (it stays queued for the next run)."""
    keys = [(step, server_id, s) for s in subjects]
    for i in range(0, len(keys), 500):
        session.execute(
            update(PipelinePending)
            .where(
                tuple_(
                    PipelinePending.step, PipelinePending.server_id, PipelinePending.subject
                ).in_(keys[i : i + 500])
            )
            .values(
                attempts=PipelinePending.attempts + 1,
                last_error=error[:2000],
                last_attempt_ms=now_ms(),
            )
        )
