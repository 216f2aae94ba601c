"""Which rules an event fires, through which channels, muted or throttled: pure decisions.

:func:`decide` is called in the transaction that decides the alerts of newly loaded applications
(the pipeline's ``alerts`` step): each :class:`Decision` becomes an outbox row there (``send``: a
row of its own; ``fold``: added to the rule's folded row of the hour; ``muted``: a row that is
never sent, which shows what the mute silenced).

A channel gets one message per occurrence: the first rule, in the configuration's order, that
fires for the event and names the channel decides it (its throttle applies); a later rule that
names the same channel adds nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sparkscope.config.notifications.model import Mute, NotificationSettings, Rule, Scope, When
from sparkscope.notify import outbox
from sparkscope.notify.events import AlertEvent, Digest, Envelope, FoldedAlerts, from_json, to_json
from sparkscope.notify.messages import document
from sparkscope.notify.text import one_line
from sparkscope.present.display import fmt_duration_ms, fmt_hours

HOUR = dt.timedelta(hours=1)
FOLD_TOP = 10  # alerts shown in full in a folded message
FOLD_IDS = 1000  # occurrence ids kept in one (the count stays exact)


def _in(values: frozenset[str] | None, value: str | None) -> bool:
    return values is None or (value is not None and value in values)


def scope_matches(
    scope: Scope, user: str | None, queue: str | None, name: str, server: str
) -> bool:
    """Every key set must match: user, queue and server exactly, name by regex search."""
    return (
        _in(scope.user, user)
        and _in(scope.queue, queue)
        and _in(scope.server, server)
        and (scope.name is None or scope.name.search(name))
    )


def mute_for(mutes: Sequence[Mute], e: AlertEvent, now: dt.datetime) -> Mute | None:
    """The first mute in force that matches every key it sets; ``heuristics`` mutes only
    findings of those heuristics."""
    for m in mutes:
        if now >= m.until:
            continue
        if m.name is not None and not m.name.search(e.app_name):
            continue
        if m.app_id is not None and e.app_id not in m.app_id:
            continue
        if m.server is not None and e.server not in m.server:
            continue
        if m.heuristics is not None and (e.kind != "finding" or e.heuristic not in m.heuristics):
            continue
        return m
    return None


def trigger(when: When, e: AlertEvent) -> tuple[bool, str | None]:
    """Whether the event fires a rule with this ``when``, and why in one sentence if the event
    alone does not say it (a threshold the rule set)."""
    if e.kind == "finding":
        fires = when.min_severity is not None and e.severity >= when.min_severity
        return fires and (when.heuristics is None or e.heuristic in when.heuristics), None
    if e.kind == "regression":
        return when.regression, None
    if e.kind == "failure":
        return when.failed, None
    if e.kind == "cost_spike":
        base, cost, pct = e.baseline_core_hours, e.cost_core_hours, when.cost_spike_pct
        if pct is None or not base or base <= 0 or cost is None:
            return False, None
        over = (cost - base) / base * 100
        if over < pct:
            return False, None
        return True, (
            f"{fmt_hours(cost)} core-hours, {over:.0f}% over the recent median of "
            f"{fmt_hours(base)} (alert from {pct:g}%)."
        )
    # deadline
    if when.deadline_ms is None or e.duration_ms is None or e.duration_ms <= when.deadline_ms:
        return False, None
    what = "is forecast to take" if e.forecast else "took"
    return (
        True,
        f"It {what} {fmt_duration_ms(e.duration_ms)}, past the deadline of {fmt_duration_ms(when.deadline_ms)}.",
    )


@dataclass(frozen=True)
class Throttle:
    """Whether the rule is over its limit, and the clock hour a folded alert joins."""

    fold: bool
    window_start: dt.datetime  # the clock hour a folded alert joins


def throttle(rule: Rule, now: dt.datetime, recent: Sequence[dt.datetime]) -> Throttle:
    """``recent``: when this rule's alerts of the last hour were decided as single messages.
    Past ``max_per_hour`` in the trailing hour, alerts fold into one message per clock hour,
    due at the end of that hour."""
    window = now.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
    if rule.max_per_hour is None:
        return Throttle(False, window)
    in_hour = sum(1 for t in recent if now - HOUR < t <= now)
    return Throttle(in_hour >= rule.max_per_hour, window)


def fold_add(
    folded: FoldedAlerts | None, e: AlertEvent, rule: Rule, window_start: dt.datetime
) -> FoldedAlerts:
    """The rule's folded message of the hour with one more alert."""
    if folded is None:
        folded = FoldedAlerts(
            rule.name, window_start, window_start + HOUR, rule.max_per_hour or 0, 0, {}, ()
        )
    if e.occurrence_id in folded.occurrence_ids:
        return folded
    by = dict(folded.by_severity)
    by[e.severity] = by.get(e.severity, 0) + 1
    top = sorted((*folded.top, e), key=lambda x: (-x.severity, -(x.cost_core_hours or 0), x.app_id))
    ids = folded.occurrence_ids
    if len(ids) < FOLD_IDS:
        ids = (*ids, e.occurrence_id)
    return FoldedAlerts(
        folded.rule,
        folded.window_start,
        folded.window_end,
        folded.max_per_hour,
        folded.count + 1,
        by,
        tuple(top[:FOLD_TOP]),
        ids,
    )


@dataclass(frozen=True)
class Decision:
    """What one event makes for one rule: a message (``send``), a share of the rule's folded
    message of the hour (``fold``), or a muted row (``muted``)."""

    rule: str
    action: str  # "send", "fold" or "muted"
    channel: str | None = None
    key: str | None = None  # the outbox row's idempotency key
    reason: str | None = None  # the trigger's sentence, shown in the message
    mute: str | None = None  # which mute, for "muted"
    due_at: dt.datetime | None = None


def decide(
    settings: NotificationSettings,
    e: AlertEvent,
    now: dt.datetime,
    recent: Mapping[str, Sequence[dt.datetime]],
    existing_keys: Collection[str] = (),
) -> list[Decision]:
    """The outbox rows one event makes: per channel, from the first rule whose scope and
    trigger match and that names it.

    ``recent``: per rule, when its single alerts of the last hour were decided (for throttling);
    ``existing_keys``: alert keys already in the outbox, so that deciding an event again (a
    re-fetch) neither sends it again nor folds it into a burst it was never part of."""
    out: list[Decision] = []
    taken: set[str] = set()
    for rule in settings.rules:
        if not scope_matches(rule.scope, e.user, e.queue, e.app_name, e.server):
            continue
        fires, reason = trigger(rule.when, e)
        channels = [c for c in rule.channels if c not in taken]
        if not fires or not channels:
            continue
        taken.update(channels)
        keys = {c: outbox.alert_key(e.occurrence_id, c) for c in channels}
        if any(k in existing_keys for k in keys.values()):
            continue
        mute = mute_for(settings.mutes, e, now)
        if mute is not None:
            for c in channels:
                out.append(Decision(rule.name, "muted", c, keys[c], reason, mute.label, now))
            continue
        t = throttle(rule, now, recent.get(rule.name, ()))
        for channel in channels:
            if t.fold:
                key = outbox.fold_key(rule.name, t.window_start, channel)
                out.append(
                    Decision(rule.name, "fold", channel, key, reason, due_at=t.window_start + HOUR)
                )
            else:
                out.append(Decision(rule.name, "send", channel, keys[channel], reason, due_at=now))
    return out


def decide_many(
    settings: NotificationSettings,
    events: Sequence[AlertEvent],
    now: dt.datetime,
    recent: Mapping[str, Sequence[dt.datetime]],
    existing_keys: Collection[str] = (),
) -> list[tuple[AlertEvent, Decision]]:
    """:func:`decide` for a batch, counting each single alert towards its rule's throttle."""
    counts = {name: list(times) for name, times in recent.items()}
    out = []
    for e in events:
        decisions = decide(settings, e, now, counts, existing_keys)
        for rule in {d.rule for d in decisions if d.action == "send"}:
            counts.setdefault(rule, []).append(now)
        out += [(e, d) for d in decisions]
    return out


# ------------------------------------------------------------------- decisions -> outbox rows


def _summary(env: Envelope) -> str:
    return one_line(document(env).subject, 300)


def alert_row(d: Decision, e: AlertEvent, now: dt.datetime) -> outbox.OutboxRecord:
    """The alert's own row (INSERT ... ON CONFLICT DO NOTHING): ``pending`` to be sent,
    ``muted``, or ``folded`` (the message is the rule's folded row, :func:`fold_row`)."""
    assert d.key and d.channel
    key = d.key if d.action != "fold" else outbox.alert_key(e.occurrence_id, d.channel)
    env = Envelope(outbox.delivery_id(key), now, d.channel, e, rule=d.rule, reason=d.reason)
    state, note = outbox.PENDING, None
    if d.action == "muted":
        state, note = outbox.MUTED, f"muted by {d.mute}"
    elif d.action == "fold":
        state, note = outbox.FOLDED, f"folded into {d.key}"
    return outbox.OutboxRecord(
        key,
        "alert",
        d.channel,
        to_json(env),
        _summary(env),
        now,
        now,
        rule=d.rule,
        occurrence_id=e.occurrence_id,
        state=state,
        last_error=note,
    )


def fold_row(
    existing: outbox.OutboxRecord | None, d: Decision, e: AlertEvent, rule: Rule, now: dt.datetime
) -> outbox.OutboxRecord:
    """The rule's folded row of the hour with ``e`` added (read FOR UPDATE, then upsert). The
    row is due at the end of its window; a row already past 'pending' is never changed (the
    window is over: the caller's clock is wrong, and the alert goes in the next window)."""
    assert d.action == "fold" and d.key and d.channel and d.due_at
    window_start = d.due_at - HOUR
    folded = None
    if existing is not None:
        if existing.state != outbox.PENDING:
            raise ValueError(f"{existing.key} is {existing.state}: its window is over")
        folded = from_json(existing.payload).body
    folded = fold_add(folded, e, rule, window_start)
    env = Envelope(outbox.delivery_id(d.key), now, d.channel, folded, rule=rule.name)
    if existing is not None:
        return dataclasses.replace(existing, payload=to_json(env), summary=_summary(env))
    return outbox.OutboxRecord(
        d.key, "folded", d.channel, to_json(env), _summary(env), now, d.due_at, rule=rule.name
    )


def digest_row(
    spec_name: str, period_start: dt.datetime, channel: str, digest: Digest, now: dt.datetime
) -> outbox.OutboxRecord:
    """The row of one channel's digest of one period."""
    key = outbox.digest_key(spec_name, period_start, channel)
    env = Envelope(outbox.delivery_id(key), now, channel, digest, digest=spec_name)
    return outbox.OutboxRecord(
        key,
        "digest",
        channel,
        to_json(env),
        _summary(env),
        now,
        now,
        digest=spec_name,
        period_start=period_start,
    )
