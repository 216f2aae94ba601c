"""The ledger of derived work still to do (table ``pipeline_pending``).

A step that cannot run inside the transaction that makes it necessary (it works on a whole
recurring key or server, not one application) is queued in that transaction and taken off the
ledger in the transaction that does it. A killed or failed run therefore leaves its work on the
ledger, and any later ``fetch`` or ``analyze`` finishes it.

Work asked for again while a run is doing it (a fetch loads another run of a key that an
``analyze`` is refitting) must not be taken off by that run, which did not see it: queueing
again moves the row's ``queued_at_ms`` forward (at least by one), and a run takes off only the
rows whose ``queued_at_ms`` is still the one it read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, delete, select, tuple_, update
from sqlalchemy.orm import Session

from sparkscope import bulk
from sparkscope.db import now_ms
from sparkscope.models.pipeline import PipelinePending

#: One queued unit of work: (step, server id, subject).
Work = tuple[str, int, str]


@dataclass(frozen=True)
class Pending:
    """The queued subjects of one step on one server, with the most failed attempts among them
    and, per subject, the ``queued_at_ms`` read."""

    step: str
    server_id: int
    subjects: tuple[str, ...]
    attempts: int
    queued: tuple[int, ...] = ()


def enqueue(session: Session, work: Iterable[Work]) -> None:
    """Queue work in the caller's transaction (work already queued is marked queued again)."""
    now = now_ms()
    values: list[Any] = []
    for step, sid, subject in sorted(set(work)):  # one order: writers cannot deadlock
        values += (step, sid, subject, now, 0)
    if values:
        bulk.insert_rows(session.connection(), _TABLE, _COLUMNS, values, _REQUEUE)


_TABLE = cast(Table, PipelinePending.__table__)
_COLUMNS = ("step", "server_id", "subject", "queued_at_ms", "attempts")
#: Work already queued is queued again, later than any run that read it.
_REQUEUE = (
    "ON CONFLICT (step, server_id, subject) DO UPDATE SET queued_at_ms = CASE"
    " WHEN excluded.queued_at_ms > pipeline_pending.queued_at_ms THEN excluded.queued_at_ms"
    " ELSE pipeline_pending.queued_at_ms + 1 END"
)


def pending(
    session: Session, steps: Sequence[str], server_ids: Sequence[int] | None = None
) -> list[Pending]:
    """What is queued for the given steps, grouped per step and server, in ``steps`` order."""
    query = select(
        PipelinePending.step,
        PipelinePending.server_id,
        PipelinePending.subject,
        PipelinePending.attempts,
        PipelinePending.queued_at_ms,
    ).where(PipelinePending.step.in_(list(steps)))
    if server_ids is not None:
        query = query.where(PipelinePending.server_id.in_(list(server_ids)))
    groups: dict[tuple[str, int], list[tuple[str, int, int]]] = defaultdict(list)
    for step, sid, subject, attempts, queued in session.execute(query):
        groups[(step, sid)].append((subject, attempts, queued))
    order = {s: i for i, s in enumerate(steps)}
    out = []
    for (step, sid), items in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        items.sort()
        out.append(
            Pending(
                step,
                sid,
                tuple(s for s, _, _ in items),
                max(a for _, a, _ in items),
                tuple(q for _, _, q in items),
            )
        )
    return out


def done(session: Session, unit: Pending) -> None:
    """Take a unit of work off the ledger, in the transaction that did it: each subject unless it
    was queued again since the unit was read."""
    keys = [
        (unit.step, unit.server_id, s, q) for s, q in zip(unit.subjects, unit.queued, strict=True)
    ]
    for i in range(0, len(keys), 500):
        session.execute(
            delete(PipelinePending).where(
                tuple_(
                    PipelinePending.step,
                    PipelinePending.server_id,
                    PipelinePending.subject,
                    PipelinePending.queued_at_ms,
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
