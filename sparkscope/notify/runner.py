"""``sparkscope notify``: send what is due, one message at a time, losing nothing when killed.

One run::

    recover:  'sending' rows whose lease expired -> pending       (commit)
    digests:  each digest whose period ended -> a row per channel  (commit)
    claim:    one due row -> 'sending', attempts + 1               (commit)   <- before the send
    send:     one attempt, no retry inside the run
    settle:   -> sent | failed (next attempt at) | dead            (commit)   <- after the send

A SIGKILL before the claim's commit leaves the row due; between claim and settle it leaves one
``sending`` row, which a later run recovers once its lease has expired and sends again: that one
message may arrive twice, with the same event id. Nothing else can be sent twice, since a row is
only sent from ``sending`` and only one run can claim it.

A channel whose secret is not set, or that failed once in this run with a retryable outcome, is
skipped for the rest of the run: its messages wait, no attempt spent on them.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.notifications.model import (
    Channel,
    MissingSecret,
    NotificationSettings,
    secrets_of,
)
from sparkscope.notify import outbox
from sparkscope.notify.channels import send
from sparkscope.notify.digests import DigestContext, enqueue_due, spec_digest
from sparkscope.notify.events import Envelope, from_json
from sparkscope.notify.messages import document
from sparkscope.notify.outbox import SendOutcome
from sparkscope.notify.periods import due_period
from sparkscope.notify.store import OutboxStore, last_period_start

log = logging.getLogger("sparkscope.notify.runner")

Sender = Callable[[Channel, Envelope, Mapping[str, str]], SendOutcome]
Clock = Callable[[], dt.datetime]


@dataclass
class RunReport:
    """What one run did."""

    recovered: int = 0
    digests: int = 0
    sent: int = 0
    failed: int = 0
    dead: int = 0
    #: dry run: ``channel: kind subject`` of each message that would be sent
    would_send: list[str] = field(default_factory=list)
    #: channel -> why it is failing (this run)
    failing: dict[str, str] = field(default_factory=dict)


def blocked(channel: Channel, environ: Mapping[str, str]) -> str | None:
    """Why a channel cannot send now (a secret's variable is not set), or None."""
    for ref in secrets_of(channel):
        try:
            ref.value(environ)
        except MissingSecret as exc:
            return str(exc)
    return None


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _dry_run(
    factory: sessionmaker[Session],
    settings: NotificationSettings,
    ctx: DigestContext,
    report: RunReport,
    now: dt.datetime,
) -> RunReport:
    """What a run would send now, changing nothing."""
    known = {c.name for c in settings.channels}
    with factory() as session:
        for spec in settings.digests:
            period = due_period(spec, now, last_period_start(session, spec.name))
            if period is not None:
                digest = spec_digest(session, spec, period, ctx)
                env = Envelope("-", now, spec.channels[0], digest, digest=spec.name)
                subject = document(env).subject
                for c in spec.channels:
                    note = f" (blocked: {report.failing[c]})" if c in report.failing else ""
                    report.would_send.append(f"{c}: digest {subject}{note}")
    for rec in OutboxStore(factory).due(now):
        why = report.failing.get(rec.channel) or (
            None if rec.channel in known else "channel no longer configured"
        )
        note = f" (blocked: {why})" if why else ""
        report.would_send.append(f"{rec.channel}: {rec.kind} {rec.summary}{note}")
    return report


def run(
    factory: sessionmaker[Session],
    settings: NotificationSettings,
    environ: Mapping[str, str],
    ctx: DigestContext,
    *,
    dry_run: bool = False,
    limit: int = 500,
    sender: Sender = send,
    clock: Clock = _utcnow,
    rand: Callable[[], float] = random.random,
) -> RunReport:
    """One ``sparkscope notify`` run (at most ``limit`` sends)."""
    report = RunReport()
    usable = set()
    for c in settings.channels:
        why = blocked(c, environ)
        if why:
            report.failing[c.name] = why
            log.error("channel %s: %s; its messages wait", c.name, why)
        else:
            usable.add(c.name)
    if dry_run:
        return _dry_run(factory, settings, ctx, report, clock())
    store = OutboxStore(factory)
    policy = settings.delivery
    report.recovered = store.recover(clock(), policy)
    if report.recovered:
        log.warning("%d message(s) interrupted by an earlier run are due again", report.recovered)
    report.digests = len(enqueue_due(factory, settings, ctx, clock()))
    known = {c.name for c in settings.channels}
    # rows of channels removed from the configuration are claimed too, and end dead
    orphans = {r.channel for r in store.due(clock()) if r.channel not in known}
    for _ in range(limit):
        claimed = store.claim_next(clock(), usable | orphans)
        if claimed is None:
            break
        if claimed.channel not in known:
            why = f"channel {claimed.channel} is no longer configured"
            dead = outbox.settle(claimed, SendOutcome("permanent", why), clock(), policy, rand())
            store.settle(claimed, dead)
            report.dead += 1
            continue
        try:
            envelope = from_json(claimed.payload)
            outcome = sender(settings.channel(claimed.channel), envelope, environ)
        except Exception as exc:  # a bug, not a delivery problem: keep the message, say so
            log.exception("sending %s to %s failed", claimed.kind, claimed.channel)
            outcome = SendOutcome("retryable", f"internal error: {type(exc).__name__}")
        settled = outbox.settle(claimed, outcome, clock(), policy, rand())
        if not store.settle(claimed, settled):
            log.warning("%s to %s: taken over by another run", claimed.kind, claimed.channel)
            continue
        if settled.state == outbox.SENT:
            report.sent += 1
            log.info("sent %s to %s: %s", claimed.kind, claimed.channel, outcome.detail)
            continue
        report.dead += settled.state == outbox.DEAD
        report.failed += settled.state == outbox.FAILED
        log.warning(
            "%s to %s %s: %s", claimed.kind, claimed.channel, settled.state, settled.last_error
        )
        report.failing[claimed.channel] = settled.last_error or outcome.detail
        if outcome.status == "retryable":
            usable.discard(claimed.channel)  # down: its other messages wait for the next run
    return report
