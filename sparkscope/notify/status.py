"""What the Notifications page and ``GET /api/notifications`` show, read from the configuration and
the outbox (reads only; nothing here sends): the rules, digests and mutes in force, each
channel's health, the messages of late, and a preview of a digest's period so far.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sparkscope.config.notifications.model import (
    Channel,
    DigestSpec,
    EmailChannel,
    Rule,
    Scope,
    SlackChannel,
)
from sparkscope.models.notify import NotifyOutbox as T
from sparkscope.notify import outbox
from sparkscope.notify.digests import DigestContext, build_digest
from sparkscope.notify.events import Digest
from sparkscope.notify.masking import shown_url
from sparkscope.notify.outbox import ChannelHealth, OutboxRecord
from sparkscope.notify.periods import (
    Period,
    boundary,
    last_boundary_date,
    next_boundary,
    scope_text,
)
from sparkscope.notify.store import from_ms, record
from sparkscope.present.display import fmt_duration_ms, severity_name

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def channel_target(c: Channel) -> str:
    """Where a channel sends, as it may be shown (never a secret)."""
    if isinstance(c, EmailChannel):
        return f"{', '.join(c.to)} via {c.smtp_host}:{c.smtp_port} ({c.security})"
    if isinstance(c, SlackChannel):
        return f"Slack incoming webhook (URL from ${c.webhook_url.env})"
    if c.url_env is not None:
        return f"webhook (URL from ${c.url_env.env}), signed with ${c.secret.env}"
    return f"{shown_url(c.url or '')} signed with ${c.secret.env}"


def triggers_text(rule: Rule) -> str:
    """``severe findings (stage_skew), regressions, failures, cost +50%, past 2.0 h``."""
    w, parts = rule.when, []
    if w.min_severity is not None:
        which = f" of {', '.join(sorted(w.heuristics))}" if w.heuristics else ""
        parts.append(f"findings {severity_name(w.min_severity)} or worse{which}")
    if w.regression:
        parts.append("regressions")
    if w.failed:
        parts.append("failed applications")
    if w.cost_spike_pct is not None:
        parts.append(f"core-hours {w.cost_spike_pct:g}% over the key's recent median")
    if w.deadline_ms is not None:
        parts.append(f"runs or forecasts longer than {fmt_duration_ms(w.deadline_ms)}")
    return "; ".join(parts)


def schedule_text(spec: DigestSpec) -> str:
    """``every day at 07:00 (Europe/Prague)``."""
    when = "every day" if spec.every == "day" else f"every {WEEKDAYS[spec.weekday]}"
    return f"{when} at {spec.at:%H:%M} ({spec.timezone.key})"


def health(session: Session, channels: list[str]) -> list[ChannelHealth]:
    """Per configured channel: failing when its newest attempted message did not go through."""
    counts: dict[tuple[str, str], int] = {}
    for channel, state, n in session.execute(
        select(T.channel, T.state, func.count()).group_by(T.channel, T.state)
    ):
        counts[(channel, state)] = int(n)
    out = []
    for name in channels:
        newest = session.execute(
            select(T.state, T.last_error)
            .where(T.channel == name, T.last_attempt_ms.is_not(None), T.state != outbox.SENDING)
            .order_by(T.last_attempt_ms.desc(), T.id.desc())
            .limit(1)
        ).first()
        failing = newest is not None and newest[0] in (outbox.FAILED, outbox.DEAD)
        last_sent = session.scalar(select(func.max(T.sent_ms)).where(T.channel == name))
        out.append(
            ChannelHealth(
                name,
                failing,
                pending=counts.get((name, outbox.PENDING), 0),
                failed=counts.get((name, outbox.FAILED), 0),
                dead=counts.get((name, outbox.DEAD), 0),
                last_error=newest[1] if failing and newest else None,
                last_sent_at=from_ms(last_sent),
            )
        )
    return out


def recent(session: Session, limit: int = 50) -> list[OutboxRecord]:
    """The newest messages, newest first."""
    rows = session.scalars(select(T).order_by(T.created_ms.desc(), T.id.desc()).limit(limit))
    return [record(r) for r in rows]


@dataclass(frozen=True)
class DigestStatus:
    """A configured digest: when it runs next and the last period in the outbox."""

    spec: DigestSpec
    schedule: str
    scope: str
    next_at: dt.datetime
    last_period_start: dt.datetime | None


def digest_status(session: Session, spec: DigestSpec, now: dt.datetime) -> DigestStatus:
    last = from_ms(session.scalar(select(func.max(T.period_start_ms)).where(T.digest == spec.name)))
    return DigestStatus(
        spec, schedule_text(spec), scope_text(spec.scope), next_boundary(spec, now), last
    )


def current_period(spec: DigestSpec, now: dt.datetime) -> Period:
    """The digest's period that has not ended yet, up to ``now``."""
    start = boundary(spec, last_boundary_date(spec, now))
    return Period(start, now)


def preview(
    session: Session,
    now: dt.datetime,
    ctx: DigestContext,
    spec: DigestSpec | None = None,
    scope: Scope | None = None,
) -> Digest:
    """The next digest of ``spec`` as it stands now (its period so far), or a day's digest of
    any ``scope`` up to now; reads only."""
    if spec is not None:
        period = current_period(spec, now)
        before = Period(period.start - (period.end - period.start), period.start)
        return build_digest(session, spec.name, spec.scope, period, before, spec.timezone.key, ctx)
    period = Period(now - dt.timedelta(days=1), now)
    before = Period(period.start - dt.timedelta(days=1), period.start)
    return build_digest(session, "preview", scope or Scope(), period, before, "UTC", ctx)
