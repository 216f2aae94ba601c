"""The outbox table (``notify_outbox``) as the deciding transaction and ``sparkscope notify`` use
it, on PostgreSQL and SQLite alike.

Writing rows happens in the caller's session (the transaction that decides them). The send loop's
steps are each one transaction of their own, committed before the next step starts:

* :meth:`OutboxStore.recover` -- ``sending`` rows whose lease expired go back to ``pending`` (or
  ``dead`` after their last attempt);
* :meth:`OutboxStore.claim_next` -- one due row becomes ``sending``, its attempt counted, in a
  single ``UPDATE ... RETURNING`` whose subquery picks the row (``FOR UPDATE SKIP LOCKED`` on
  PostgreSQL; on SQLite the statement holds the write lock from its start), so two runs never
  claim the same row;
* :meth:`OutboxStore.settle` -- the row takes the send's outcome, only if it is still the claim
  this run made (a row whose lease expired and that another run claimed is left to that run).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence
from typing import Any, cast

from sqlalchemy import Table, case, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.notifications.model import Delivery
from sparkscope.db import dialect_insert
from sparkscope.models.notify import NotifyOutbox
from sparkscope.notify import outbox
from sparkscope.notify.outbox import OutboxRecord

HOUR_MS = 3_600_000
T = NotifyOutbox


def to_ms(t: dt.datetime | None) -> int | None:
    """A time as epoch milliseconds (None stays None)."""
    return None if t is None else round(t.timestamp() * 1000)


def from_ms(ms: int | None) -> dt.datetime | None:
    """Epoch milliseconds as a UTC time (None stays None)."""
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def record(row: Any) -> OutboxRecord:
    """An outbox row (ORM object or mapping) as an :class:`OutboxRecord`."""
    get = row.__getitem__ if isinstance(row, dict) else lambda k: getattr(row, k)
    return OutboxRecord(
        key=get("idempotency_key"),
        kind=get("kind"),
        channel=get("channel"),
        payload=get("payload"),
        summary=get("summary"),
        created_at=_utc(get("created_ms")),
        next_attempt_at=_utc(get("next_attempt_ms")),
        rule=get("rule"),
        digest=get("digest"),
        occurrence_id=get("occurrence_id"),
        period_start=from_ms(get("period_start_ms")),
        state=get("state"),
        attempts=get("attempts"),
        claimed_at=from_ms(get("claimed_ms")),
        last_attempt_at=from_ms(get("last_attempt_ms")),
        sent_at=from_ms(get("sent_ms")),
        last_error=get("last_error"),
        id=get("id"),
    )


def _rowcount(result: Any) -> int:
    """Rows a DML statement changed."""
    return int(getattr(result, "rowcount", 0) or 0)


def _values(rec: OutboxRecord) -> dict[str, Any]:
    return {
        "idempotency_key": rec.key,
        "event_id": rec.event_id,
        "kind": rec.kind,
        "rule": rec.rule,
        "digest": rec.digest,
        "channel": rec.channel,
        "occurrence_id": rec.occurrence_id,
        "period_start_ms": to_ms(rec.period_start),
        "summary": rec.summary[:300],
        "payload": dict(rec.payload),
        "state": rec.state,
        "attempts": rec.attempts,
        "created_ms": to_ms(rec.created_at),
        "next_attempt_ms": to_ms(rec.next_attempt_at),
        "claimed_ms": to_ms(rec.claimed_at),
        "last_attempt_ms": to_ms(rec.last_attempt_at),
        "sent_ms": to_ms(rec.sent_at),
        "last_error": rec.last_error,
    }


# ------------------------------------------------------------------ in the deciding transaction


def insert(session: Session, rows: Iterable[OutboxRecord]) -> int:
    """Add rows whose key is new (a key already there stays as it is); how many were added."""
    added = 0
    table = cast(Table, T.__table__)
    for rec in rows:
        stmt = dialect_insert(session, table).values(**_values(rec))
        stmt = stmt.on_conflict_do_nothing(index_elements=["idempotency_key"])
        added += _rowcount(session.execute(stmt))
    return added


def existing_keys(session: Session, keys: Collection[str]) -> set[str]:
    """Which of these idempotency keys the outbox holds."""
    found: set[str] = set()
    wanted = sorted(set(keys))
    for i in range(0, len(wanted), 500):
        found.update(
            session.scalars(
                select(T.idempotency_key).where(T.idempotency_key.in_(wanted[i : i + 500]))
            )
        )
    return found


def recent_alerts(
    session: Session, rules: Sequence[str], now: dt.datetime
) -> dict[str, list[dt.datetime]]:
    """Per rule, when its single alerts of the last hour were decided (one time per occurrence,
    whatever the number of channels): what the throttle counts."""
    since = (to_ms(now) or 0) - HOUR_MS
    out: dict[str, list[dt.datetime]] = {r: [] for r in rules}
    query = (
        select(T.rule, func.min(T.created_ms))
        .where(T.kind == "alert", T.rule.in_(list(rules)), T.created_ms > since)
        .where(T.state.notin_((outbox.MUTED, outbox.FOLDED)))
        .group_by(T.rule, T.occurrence_id)
    )
    for rule, ms in session.execute(query):
        out.setdefault(rule or "", []).append(_utc(ms))
    return out


def locked(session: Session, key: str) -> OutboxRecord | None:
    """The row of a key, locked until the end of the transaction (PostgreSQL; SQLite has one
    writer at a time)."""
    row = session.scalars(select(T).where(T.idempotency_key == key).with_for_update()).first()
    return None if row is None else record(row)


def upsert_fold(session: Session, rec: OutboxRecord) -> None:
    """Write a rule's folded row of the hour: the new row, or the locked one with its payload
    grown (see :func:`sparkscope.notify.rules.fold_row`)."""
    if rec.id is None:
        insert(session, [rec])
        return
    session.execute(
        update(T)
        .where(T.id == rec.id, T.state == outbox.PENDING)
        .values(payload=dict(rec.payload), summary=rec.summary[:300])
    )


def last_period_start(session: Session, digest: str) -> dt.datetime | None:
    """Start of the newest period of a digest in the outbox."""
    return from_ms(session.scalar(select(func.max(T.period_start_ms)).where(T.digest == digest)))


# ---------------------------------------------------------------------------- the send loop


class OutboxStore:
    """What ``sparkscope notify`` does to the outbox, each method one committed transaction."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def recover(self, now: dt.datetime, policy: Delivery) -> int:
        """``sending`` rows whose lease expired (a run killed while sending) are due again, or
        dead if that was their last attempt; whether their send got through is unknown."""
        cutoff = (to_ms(now) or 0) - round(policy.lease_s * 1000)
        note = "interrupted while sending; delivered or not, unknown"
        with self.factory() as session, session.begin():
            result = session.execute(
                update(T)
                .where(T.state == outbox.SENDING, T.claimed_ms <= cutoff)
                .values(
                    state=case(
                        (T.attempts >= policy.max_attempts, outbox.DEAD), else_=outbox.PENDING
                    ),
                    next_attempt_ms=to_ms(now),
                    claimed_ms=None,
                    last_error=note,
                )
            )
            return _rowcount(result)

    def due(self, now: dt.datetime, limit: int = 10_000) -> list[OutboxRecord]:
        """Due rows, oldest first (what a run would send)."""
        with self.factory() as session:
            rows = session.scalars(
                select(T)
                .where(
                    T.state.in_((outbox.PENDING, outbox.FAILED)), T.next_attempt_ms <= to_ms(now)
                )
                .order_by(T.next_attempt_ms, T.created_ms, T.id)
                .limit(limit)
            ).all()
            return [record(r) for r in rows]

    def claim_next(self, now: dt.datetime, channels: Collection[str]) -> OutboxRecord | None:
        """The oldest due row of these channels, now ``sending``, its attempt counted; committed
        before it is sent."""
        if not channels:
            return None
        at = to_ms(now)
        pick = (
            select(T.id)
            .where(
                T.state.in_((outbox.PENDING, outbox.FAILED)),
                T.next_attempt_ms <= at,
                T.channel.in_(sorted(channels)),
            )
            .order_by(T.next_attempt_ms, T.created_ms, T.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        with self.factory() as session, session.begin():
            row = (
                session.execute(
                    update(T)
                    .where(T.id == pick, T.state.in_((outbox.PENDING, outbox.FAILED)))
                    .values(
                        state=outbox.SENDING,
                        attempts=T.attempts + 1,
                        claimed_ms=at,
                        last_attempt_ms=at,
                    )
                    .returning(*T.__table__.c)
                )
                .mappings()
                .first()
            )
            return None if row is None else record(dict(row))

    def settle(self, claimed: OutboxRecord, settled: OutboxRecord) -> bool:
        """Write a send's outcome on the row this run claimed; False when the row is no longer
        that claim (its lease expired and another run took it)."""
        with self.factory() as session, session.begin():
            result = session.execute(
                update(T)
                .where(
                    T.id == claimed.id,
                    T.state == outbox.SENDING,
                    T.claimed_ms == to_ms(claimed.claimed_at),
                )
                .values(
                    state=settled.state,
                    next_attempt_ms=to_ms(settled.next_attempt_at),
                    claimed_ms=None,
                    sent_ms=to_ms(settled.sent_at),
                    last_error=settled.last_error,
                )
            )
            return _rowcount(result) > 0

    def retry_dead(self, now: dt.datetime) -> int:
        """Dead rows due again with fresh attempts (``sparkscope notify --retry-dead``)."""
        with self.factory() as session, session.begin():
            result = session.execute(
                update(T)
                .where(T.state == outbox.DEAD)
                .values(state=outbox.PENDING, attempts=0, next_attempt_ms=to_ms(now))
            )
            return _rowcount(result)
