"""The outbox's rules, as pure functions over plain records (table ``notify_outbox``, read
and written by :mod:`sparkscope.notify.store`).

A message is a row: written in the transaction that decides it, then delivered by
``sparkscope notify``, which moves it through::

    pending --claim--> sending --sent--> sent
       ^                  |----retryable--> failed (next_attempt_at) --due--> claim again
       |                  |----permanent, or attempts used up--> dead
       +--lease expired---+   (a run killed while sending: back to pending)

A ``muted`` row records an alert a mute silenced, a ``folded`` one an alert over its rule's
limit that went into the rule's folded message of the hour; neither is sent itself. Claiming counts the attempt
before the send, so a message that kills the sender every time still ends ``dead`` instead of
looping. Idempotency keys make deciding twice harmless: the row of a key exists once (unique
index), whatever re-runs the decision.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkscope.config.notifications.model import Delivery
from sparkscope.notify.events import NAMESPACE

PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"
DEAD, MUTED, FOLDED = "dead", "muted", "folded"
STATES = (PENDING, SENDING, SENT, FAILED, DEAD, MUTED, FOLDED)
#: States a row never leaves by itself (what retention may delete once old).
FINAL = (SENT, DEAD, MUTED, FOLDED)
KINDS = ("alert", "folded", "digest")


@dataclass(frozen=True)
class SendOutcome:
    """What one attempt came to: ``sent``, ``retryable`` or ``permanent``, in one line (never a
    secret), and how long the receiver asked to wait (429, 503 Retry-After)."""

    status: str
    detail: str = ""
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        """True when delivered."""
        return self.status == "sent"


def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def alert_key(occurrence_id: str, channel: str) -> str:
    """One message per occurrence and channel, whichever rules fire for it."""
    return f"alert:{occurrence_id}:{channel}"


def digest_key(digest: str, period_start: dt.datetime, channel: str) -> str:
    """One digest per period and channel."""
    return f"digest:{digest}:{_iso(period_start)}:{channel}"


def fold_key(rule: str, window_start: dt.datetime, channel: str) -> str:
    """One folded message per rule, clock hour and channel."""
    return f"folded:{rule}:{_iso(window_start)}:{channel}"


def delivery_id(key: str) -> str:
    """The event id a receiver sees: derived from the idempotency key, so stable on retries."""
    return str(uuid.uuid5(NAMESPACE, key))


@dataclass(frozen=True)
class OutboxRecord:
    """One row of the outbox table (:class:`sparkscope.models.notify.NotifyOutbox`)."""

    key: str  # idempotency key, unique
    kind: str  # alert, folded or digest
    channel: str
    payload: Mapping[str, Any]  # events.to_json(Envelope): exactly what is rendered
    summary: str  # the subject line
    created_at: dt.datetime
    next_attempt_at: dt.datetime  # due from then on (a fold: the end of its window)
    rule: str | None = None
    digest: str | None = None
    occurrence_id: str | None = None  # an alert's AlertEvent.event_id (throttle, re-decisions)
    period_start: dt.datetime | None = None  # a digest's period (the newest one sent)
    state: str = PENDING
    attempts: int = 0
    claimed_at: dt.datetime | None = None  # while 'sending': the lease's start
    last_attempt_at: dt.datetime | None = None
    sent_at: dt.datetime | None = None
    last_error: str | None = None
    id: int | None = None

    @property
    def event_id(self) -> str:
        """The id receivers see."""
        return delivery_id(self.key)


def backoff_s(attempts: int, policy: Delivery, rand: float) -> float:
    """Delay after the ``attempts``-th failed attempt: base x 2^(attempts-1), capped, with
    "equal jitter" (between half and all of it, ``rand`` in [0, 1)) so that messages failing
    together do not come back together."""
    raw = min(policy.backoff_cap_s, policy.backoff_base_s * 2.0 ** max(0, attempts - 1))
    return raw / 2 + raw / 2 * rand


def settle(
    rec: OutboxRecord, outcome: SendOutcome, now: dt.datetime, policy: Delivery, rand: float
) -> OutboxRecord:
    """sending -> sent | failed (retry at) | dead, from a send's outcome."""
    if rec.state != SENDING:
        raise ValueError(f"{rec.key} is not being sent ({rec.state})")
    status, detail, retry_after_s = outcome.status, outcome.detail, outcome.retry_after_s
    if status == "sent":
        return dataclasses.replace(rec, state=SENT, sent_at=now, claimed_at=None, last_error=None)
    if status == "retryable" and rec.attempts < policy.max_attempts:
        delay = max(backoff_s(rec.attempts, policy, rand), retry_after_s or 0.0)
        return dataclasses.replace(
            rec,
            state=FAILED,
            claimed_at=None,
            last_error=detail,
            next_attempt_at=now + dt.timedelta(seconds=delay),
        )
    if status == "retryable":
        detail = f"gave up after {rec.attempts} attempts: {detail}"
    return dataclasses.replace(rec, state=DEAD, claimed_at=None, last_error=detail)


@dataclass(frozen=True)
class ChannelHealth:
    """How a channel is doing: failing when its newest attempt did not go through."""

    channel: str
    failing: bool
    pending: int = 0
    failed: int = 0
    dead: int = 0
    last_error: str | None = None
    last_sent_at: dt.datetime | None = None
