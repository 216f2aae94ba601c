"""Deciding the alerts of newly loaded applications: the body of the pipeline's ``alerts`` step.

In the caller's transaction (the one that takes the step off the ledger): the applications'
events (:mod:`sparkscope.notify.occurrences`) are run through the rules, mutes and throttles
(:mod:`sparkscope.notify.rules`), and every decision becomes an outbox row. Whatever kills the
run, the rows and the ledger change commit together or not at all, and a re-run decides the
same keys again, which the unique index turns into nothing new.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from sparkscope.config.notifications.model import NotificationSettings
from sparkscope.models.application import Application
from sparkscope.notify import outbox, store
from sparkscope.notify.events import AlertEvent
from sparkscope.notify.occurrences import Context, events_for
from sparkscope.notify.rules import Decision, alert_row, decide_many, fold_row

log = logging.getLogger("sparkscope.notify.alerts")


def app_subject(app_id: str, attempt_id: str | None) -> str:
    """The ledger subject of one application, unambiguous whatever the characters of its ids
    and no longer than they are: ``<length of the attempt id>:<attempt id>:<app id>``."""
    attempt = attempt_id or ""
    return f"{len(attempt)}:{attempt}:{app_id}"


def _identity(subject: str) -> tuple[str, str] | None:
    """(app id, attempt id) of an application subject; None for any other subject."""
    size, colon, rest = subject.partition(":")
    if not colon or not size.isdigit() or len(rest) <= int(size) or rest[int(size)] != ":":
        return None
    n = int(size)
    return rest[n + 1 :], rest[:n]


@dataclass
class Decided:
    """What one pass decided: rows per action."""

    send: int = 0
    fold: int = 0
    muted: int = 0


def decide_alerts(
    session: Session,
    server_id: int,
    subjects: Sequence[str],
    settings: NotificationSettings | None,
    ctx: Context,
    now: dt.datetime | None = None,
) -> Decided:
    """Decide and write the alerts of these applications (ledger subjects of one server;
    subjects that name no application, such as the whole-server '', decide nothing)."""
    decided = Decided()
    idents = sorted({ident for s in subjects if (ident := _identity(s)) is not None})
    if settings is None or not settings.rules or not idents:
        return decided
    now = now or dt.datetime.now(dt.UTC)
    pks: list[int] = []
    for i in range(0, len(idents), 500):
        pks += session.scalars(
            select(Application.id).where(
                Application.server_id == server_id,
                tuple_(Application.app_id, Application.attempt_id).in_(idents[i : i + 500]),
            )
        ).all()
    events = events_for(session, pks, ctx)
    channels = {c for r in settings.rules for c in r.channels}
    existing = store.existing_keys(
        session, [outbox.alert_key(e.occurrence_id, c) for e in events for c in channels]
    )
    recent = store.recent_alerts(session, [r.name for r in settings.rules], now)
    rows = []
    for event, d in decide_many(settings, events, now, recent, existing):
        if d.action == "fold":
            _fold(session, settings, d, event, now)
        rows.append(alert_row(d, event, now))
        setattr(decided, d.action, getattr(decided, d.action) + 1)
        if d.action == "muted":
            log.info("alert of %s muted by %s (rule %s)", event.app_id, d.mute, d.rule)
    store.insert(session, rows)
    return decided


def _fold(
    session: Session, settings: NotificationSettings, d: Decision, e: AlertEvent, now: dt.datetime
) -> None:
    """Add the alert to its rule's folded message of the hour (created, or locked and grown)."""
    assert d.key is not None
    rule = next(r for r in settings.rules if r.name == d.rule)
    existing = store.locked(session, d.key)
    if existing is None and store.insert(session, [fold_row(None, d, e, rule, now)]):
        return
    existing = existing or store.locked(session, d.key)  # another run created it meanwhile
    store.upsert_fold(session, fold_row(existing, d, e, rule, now))
